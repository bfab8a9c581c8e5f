# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((32, 64), dtype="float32"), w0: R.Tensor((64, 256), dtype="float32"), v0: R.Tensor((256, 64), dtype="float32"), w1: R.Tensor((64, 256), dtype="float32"), v1: R.Tensor((256, 64), dtype="float32"), w2: R.Tensor((64, 256), dtype="float32"), v2: R.Tensor((256, 64), dtype="float32"), y: R.Tensor((32, 64), dtype="float32")) -> R.Tuple(R.Tensor((), dtype="float32"), R.Tuple(R.Tensor((64, 256), dtype="float32"), R.Tensor((256, 64), dtype="float32"), R.Tensor((64, 256), dtype="float32"), R.Tensor((256, 64), dtype="float32"), R.Tensor((64, 256), dtype="float32"), R.Tensor((256, 64), dtype="float32"))):
        with R.dataflow():
            lv: R.Tensor((32, 256), dtype="float32") = R.matmul(x, w0, out_dtype=None)
            lv1: R.Tensor((32, 256), dtype="float32") = R.nn.relu(lv)
            lv2: R.Tensor((32, 64), dtype="float32") = R.matmul(lv1, v0, out_dtype=None)
            h0: R.Tensor((32, 64), dtype="float32") = R.add(x, lv2)
            lv4: R.Tensor((32, 256), dtype="float32") = R.matmul(h0, w1, out_dtype=None)
            lv5: R.Tensor((32, 256), dtype="float32") = R.nn.relu(lv4)
            lv6: R.Tensor((32, 64), dtype="float32") = R.matmul(lv5, v1, out_dtype=None)
            h1: R.Tensor((32, 64), dtype="float32") = R.add(h0, lv6)
            lv8: R.Tensor((32, 256), dtype="float32") = R.matmul(h1, w2, out_dtype=None)
            lv9: R.Tensor((32, 256), dtype="float32") = R.nn.relu(lv8)
            lv10: R.Tensor((32, 64), dtype="float32") = R.matmul(lv9, v2, out_dtype=None)
            h2: R.Tensor((32, 64), dtype="float32") = R.add(h1, lv10)
            diff: R.Tensor((32, 64), dtype="float32") = R.subtract(h2, y)
            lv13: R.Tensor((32, 64), dtype="float32") = R.multiply(diff, diff)
            loss: R.Tensor((), dtype="float32") = R.sum(lv13, axis=None, keepdims=False)
            loss_adjoint: R.Tensor((), dtype="float32") = R.ones(R.shape([]), dtype="float32")
            lv13_adjoint: R.Tensor((32, 64), dtype="float32") = R.broadcast_to(loss_adjoint, R.shape([32, 64]))
            diff_adjoint: R.Tensor((32, 64), dtype="float32") = R.multiply(lv13_adjoint, diff)
            lv_1: R.Tensor((32, 64), dtype="float32") = R.multiply(lv13_adjoint, diff)
            diff_adjoint1: R.Tensor((32, 64), dtype="float32") = R.add(diff_adjoint, lv_1)
            h2_adjoint: R.Tensor((32, 64), dtype="float32") = diff_adjoint1
            h1_adjoint: R.Tensor((32, 64), dtype="float32") = h2_adjoint
            lv10_adjoint: R.Tensor((32, 64), dtype="float32") = h2_adjoint
            lv1_1: R.Tensor((64, 256), dtype="float32") = R.permute_dims(v2, axes=[1, 0])
            lv2_1: R.Tensor((256, 32), dtype="float32") = R.permute_dims(lv9, axes=[1, 0])
            lv9_adjoint: R.Tensor((32, 256), dtype="float32") = R.matmul(lv10_adjoint, lv1_1, out_dtype=None)
            v2_adjoint: R.Tensor((256, 64), dtype="float32") = R.matmul(lv2_1, lv10_adjoint, out_dtype=None)
            lv3: R.Tensor((32, 256), dtype="bool") = R.less(lv8, R.const(0.0, "float32"))
            lv8_adjoint: R.Tensor((32, 256), dtype="float32") = R.where(lv3, R.const(0.0, "float32"), lv9_adjoint)
            lv4_1: R.Tensor((256, 64), dtype="float32") = R.permute_dims(w2, axes=[1, 0])
            lv5_1: R.Tensor((64, 32), dtype="float32") = R.permute_dims(h1, axes=[1, 0])
            lv6_1: R.Tensor((32, 64), dtype="float32") = R.matmul(lv8_adjoint, lv4_1, out_dtype=None)
            h1_adjoint1: R.Tensor((32, 64), dtype="float32") = R.add(h1_adjoint, lv6_1)
            w2_adjoint: R.Tensor((64, 256), dtype="float32") = R.matmul(lv5_1, lv8_adjoint, out_dtype=None)
            h0_adjoint: R.Tensor((32, 64), dtype="float32") = h1_adjoint1
            lv6_adjoint: R.Tensor((32, 64), dtype="float32") = h1_adjoint1
            lv7: R.Tensor((64, 256), dtype="float32") = R.permute_dims(v1, axes=[1, 0])
            lv8_1: R.Tensor((256, 32), dtype="float32") = R.permute_dims(lv5, axes=[1, 0])
            lv5_adjoint: R.Tensor((32, 256), dtype="float32") = R.matmul(lv6_adjoint, lv7, out_dtype=None)
            v1_adjoint: R.Tensor((256, 64), dtype="float32") = R.matmul(lv8_1, lv6_adjoint, out_dtype=None)
            lv9_1: R.Tensor((32, 256), dtype="bool") = R.less(lv4, R.const(0.0, "float32"))
            lv4_adjoint: R.Tensor((32, 256), dtype="float32") = R.where(lv9_1, R.const(0.0, "float32"), lv5_adjoint)
            lv10_1: R.Tensor((256, 64), dtype="float32") = R.permute_dims(w1, axes=[1, 0])
            lv11: R.Tensor((64, 32), dtype="float32") = R.permute_dims(h0, axes=[1, 0])
            lv12: R.Tensor((32, 64), dtype="float32") = R.matmul(lv4_adjoint, lv10_1, out_dtype=None)
            h0_adjoint1: R.Tensor((32, 64), dtype="float32") = R.add(h0_adjoint, lv12)
            w1_adjoint: R.Tensor((64, 256), dtype="float32") = R.matmul(lv11, lv4_adjoint, out_dtype=None)
            lv2_adjoint: R.Tensor((32, 64), dtype="float32") = h0_adjoint1
            lv13_1: R.Tensor((64, 256), dtype="float32") = R.permute_dims(v0, axes=[1, 0])
            lv14: R.Tensor((256, 32), dtype="float32") = R.permute_dims(lv1, axes=[1, 0])
            lv1_adjoint: R.Tensor((32, 256), dtype="float32") = R.matmul(lv2_adjoint, lv13_1, out_dtype=None)
            v0_adjoint: R.Tensor((256, 64), dtype="float32") = R.matmul(lv14, lv2_adjoint, out_dtype=None)
            lv15: R.Tensor((32, 256), dtype="bool") = R.less(lv, R.const(0.0, "float32"))
            lv_adjoint: R.Tensor((32, 256), dtype="float32") = R.where(lv15, R.const(0.0, "float32"), lv1_adjoint)
            lv17: R.Tensor((64, 32), dtype="float32") = R.permute_dims(x, axes=[1, 0])
            w0_adjoint: R.Tensor((64, 256), dtype="float32") = R.matmul(lv17, lv_adjoint, out_dtype=None)
            w0_adjoint_out: R.Tensor((64, 256), dtype="float32") = w0_adjoint
            v0_adjoint_out: R.Tensor((256, 64), dtype="float32") = v0_adjoint
            w1_adjoint_out: R.Tensor((64, 256), dtype="float32") = w1_adjoint
            v1_adjoint_out: R.Tensor((256, 64), dtype="float32") = v1_adjoint
            w2_adjoint_out: R.Tensor((64, 256), dtype="float32") = w2_adjoint
            v2_adjoint_out: R.Tensor((256, 64), dtype="float32") = v2_adjoint
            R.output(loss, w0_adjoint_out, v0_adjoint_out, w1_adjoint_out, v1_adjoint_out, w2_adjoint_out, v2_adjoint_out)
        return (loss, (w0_adjoint_out, v0_adjoint_out, w1_adjoint_out, v1_adjoint_out, w2_adjoint_out, v2_adjoint_out))