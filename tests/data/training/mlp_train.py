# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((16, 64), dtype="float32"), w0: R.Tensor((64, 128), dtype="float32"), w1: R.Tensor((128, 128), dtype="float32"), w2: R.Tensor((128, 128), dtype="float32"), w3: R.Tensor((128, 10), dtype="float32"), y: R.Tensor((16, 10), dtype="float32")) -> R.Tuple(R.Tensor((), dtype="float32"), R.Tuple(R.Tensor((64, 128), dtype="float32"), R.Tensor((128, 128), dtype="float32"), R.Tensor((128, 128), dtype="float32"), R.Tensor((128, 10), dtype="float32"))):
        with R.dataflow():
            lv: R.Tensor((16, 128), dtype="float32") = R.matmul(x, w0, out_dtype=None)
            h0: R.Tensor((16, 128), dtype="float32") = R.nn.relu(lv)
            lv2: R.Tensor((16, 128), dtype="float32") = R.matmul(h0, w1, out_dtype=None)
            h1: R.Tensor((16, 128), dtype="float32") = R.nn.relu(lv2)
            lv4: R.Tensor((16, 128), dtype="float32") = R.matmul(h1, w2, out_dtype=None)
            h2: R.Tensor((16, 128), dtype="float32") = R.nn.relu(lv4)
            lv6: R.Tensor((16, 10), dtype="float32") = R.matmul(h2, w3, out_dtype=None)
            diff: R.Tensor((16, 10), dtype="float32") = R.subtract(lv6, y)
            lv8: R.Tensor((16, 10), dtype="float32") = R.multiply(diff, diff)
            loss: R.Tensor((), dtype="float32") = R.sum(lv8, axis=None, keepdims=False)
            loss_adjoint: R.Tensor((), dtype="float32") = R.ones(R.shape([]), dtype="float32")
            lv8_adjoint: R.Tensor((16, 10), dtype="float32") = R.broadcast_to(loss_adjoint, R.shape([16, 10]))
            diff_adjoint: R.Tensor((16, 10), dtype="float32") = R.multiply(lv8_adjoint, diff)
            lv_1: R.Tensor((16, 10), dtype="float32") = R.multiply(lv8_adjoint, diff)
            diff_adjoint1: R.Tensor((16, 10), dtype="float32") = R.add(diff_adjoint, lv_1)
            lv6_adjoint: R.Tensor((16, 10), dtype="float32") = diff_adjoint1
            lv1: R.Tensor((10, 128), dtype="float32") = R.permute_dims(w3, axes=[1, 0])
            lv2_1: R.Tensor((128, 16), dtype="float32") = R.permute_dims(h2, axes=[1, 0])
            h2_adjoint: R.Tensor((16, 128), dtype="float32") = R.matmul(lv6_adjoint, lv1, out_dtype=None)
            w3_adjoint: R.Tensor((128, 10), dtype="float32") = R.matmul(lv2_1, lv6_adjoint, out_dtype=None)
            lv3: R.Tensor((16, 128), dtype="bool") = R.less(lv4, R.const(0.0, "float32"))
            lv4_adjoint: R.Tensor((16, 128), dtype="float32") = R.where(lv3, R.const(0.0, "float32"), h2_adjoint)
            lv4_1: R.Tensor((128, 128), dtype="float32") = R.permute_dims(w2, axes=[1, 0])
            lv5: R.Tensor((128, 16), dtype="float32") = R.permute_dims(h1, axes=[1, 0])
            h1_adjoint: R.Tensor((16, 128), dtype="float32") = R.matmul(lv4_adjoint, lv4_1, out_dtype=None)
            w2_adjoint: R.Tensor((128, 128), dtype="float32") = R.matmul(lv5, lv4_adjoint, out_dtype=None)
            lv6_1: R.Tensor((16, 128), dtype="bool") = R.less(lv2, R.const(0.0, "float32"))
            lv2_adjoint: R.Tensor((16, 128), dtype="float32") = R.where(lv6_1, R.const(0.0, "float32"), h1_adjoint)
            lv7: R.Tensor((128, 128), dtype="float32") = R.permute_dims(w1, axes=[1, 0])
            lv8_1: R.Tensor((128, 16), dtype="float32") = R.permute_dims(h0, axes=[1, 0])
            h0_adjoint: R.Tensor((16, 128), dtype="float32") = R.matmul(lv2_adjoint, lv7, out_dtype=None)
            w1_adjoint: R.Tensor((128, 128), dtype="float32") = R.matmul(lv8_1, lv2_adjoint, out_dtype=None)
            lv9: R.Tensor((16, 128), dtype="bool") = R.less(lv, R.const(0.0, "float32"))
            lv_adjoint: R.Tensor((16, 128), dtype="float32") = R.where(lv9, R.const(0.0, "float32"), h0_adjoint)
            lv11: R.Tensor((64, 16), dtype="float32") = R.permute_dims(x, axes=[1, 0])
            w0_adjoint: R.Tensor((64, 128), dtype="float32") = R.matmul(lv11, lv_adjoint, out_dtype=None)
            w0_adjoint_out: R.Tensor((64, 128), dtype="float32") = w0_adjoint
            w1_adjoint_out: R.Tensor((128, 128), dtype="float32") = w1_adjoint
            w2_adjoint_out: R.Tensor((128, 128), dtype="float32") = w2_adjoint
            w3_adjoint_out: R.Tensor((128, 10), dtype="float32") = w3_adjoint
            R.output(loss, w0_adjoint_out, w1_adjoint_out, w2_adjoint_out, w3_adjoint_out)
        return (loss, (w0_adjoint_out, w1_adjoint_out, w2_adjoint_out, w3_adjoint_out))