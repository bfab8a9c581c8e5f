# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((32, 32), dtype="float32"), wq: R.Tensor((32, 32), dtype="float32"), wk: R.Tensor((32, 32), dtype="float32"), wv: R.Tensor((32, 32), dtype="float32"), w1: R.Tensor((32, 128), dtype="float32"), w2: R.Tensor((128, 32), dtype="float32"), y: R.Tensor((32, 32), dtype="float32")) -> R.Tuple(R.Tensor((), dtype="float32"), R.Tuple(R.Tensor((32, 32), dtype="float32"), R.Tensor((32, 32), dtype="float32"), R.Tensor((32, 32), dtype="float32"), R.Tensor((32, 128), dtype="float32"), R.Tensor((128, 32), dtype="float32"))):
        with R.dataflow():
            q: R.Tensor((32, 32), dtype="float32") = R.matmul(x, wq, out_dtype=None)
            v: R.Tensor((32, 32), dtype="float32") = R.matmul(x, wv, out_dtype=None)
            lv: R.Tensor((32, 32), dtype="float32") = R.permute_dims(wk, axes=[1, 0])
            lv1: R.Tensor((32, 32), dtype="float32") = R.permute_dims(x, axes=[1, 0])
            lv3: R.Tensor((32, 32), dtype="float32") = R.matmul(lv, lv1, out_dtype=None)
            lv4: R.Tensor((32, 32), dtype="float32") = R.matmul(q, lv3, out_dtype=None)
            probs: R.Tensor((32, 32), dtype="float32") = R.nn.softmax(lv4, axis=-1)
            lv6: R.Tensor((32, 32), dtype="float32") = R.matmul(probs, v, out_dtype=None)
            h: R.Tensor((32, 32), dtype="float32") = R.add(x, lv6)
            lv8: R.Tensor((32, 128), dtype="float32") = R.matmul(h, w1, out_dtype=None)
            lv9: R.Tensor((32, 128), dtype="float32") = R.nn.relu(lv8)
            lv10: R.Tensor((32, 32), dtype="float32") = R.matmul(lv9, w2, out_dtype=None)
            out: R.Tensor((32, 32), dtype="float32") = R.add(h, lv10)
            diff: R.Tensor((32, 32), dtype="float32") = R.subtract(out, y)
            lv13: R.Tensor((32, 32), dtype="float32") = R.multiply(diff, diff)
            loss: R.Tensor((), dtype="float32") = R.sum(lv13, axis=None, keepdims=False)
            loss_adjoint: R.Tensor((), dtype="float32") = R.ones(R.shape([]), dtype="float32")
            lv13_adjoint: R.Tensor((32, 32), dtype="float32") = R.broadcast_to(loss_adjoint, R.shape([32, 32]))
            diff_adjoint: R.Tensor((32, 32), dtype="float32") = R.multiply(lv13_adjoint, diff)
            lv_1: R.Tensor((32, 32), dtype="float32") = R.multiply(lv13_adjoint, diff)
            diff_adjoint1: R.Tensor((32, 32), dtype="float32") = R.add(diff_adjoint, lv_1)
            out_adjoint: R.Tensor((32, 32), dtype="float32") = diff_adjoint1
            h_adjoint: R.Tensor((32, 32), dtype="float32") = out_adjoint
            lv10_adjoint: R.Tensor((32, 32), dtype="float32") = out_adjoint
            lv1_1: R.Tensor((32, 128), dtype="float32") = R.permute_dims(w2, axes=[1, 0])
            lv2: R.Tensor((128, 32), dtype="float32") = R.permute_dims(lv9, axes=[1, 0])
            lv9_adjoint: R.Tensor((32, 128), dtype="float32") = R.matmul(lv10_adjoint, lv1_1, out_dtype=None)
            w2_adjoint: R.Tensor((128, 32), dtype="float32") = R.matmul(lv2, lv10_adjoint, out_dtype=None)
            lv3_1: R.Tensor((32, 128), dtype="bool") = R.less(lv8, R.const(0.0, "float32"))
            lv8_adjoint: R.Tensor((32, 128), dtype="float32") = R.where(lv3_1, R.const(0.0, "float32"), lv9_adjoint)
            lv4_1: R.Tensor((128, 32), dtype="float32") = R.permute_dims(w1, axes=[1, 0])
            lv5: R.Tensor((32, 32), dtype="float32") = R.permute_dims(h, axes=[1, 0])
            lv6_1: R.Tensor((32, 32), dtype="float32") = R.matmul(lv8_adjoint, lv4_1, out_dtype=None)
            h_adjoint1: R.Tensor((32, 32), dtype="float32") = R.add(h_adjoint, lv6_1)
            w1_adjoint: R.Tensor((32, 128), dtype="float32") = R.matmul(lv5, lv8_adjoint, out_dtype=None)
            lv6_adjoint: R.Tensor((32, 32), dtype="float32") = h_adjoint1
            lv2_1: R.Tensor((32, 32), dtype="float32") = R.permute_dims(wv, axes=[1, 0])
            lv3_2: R.Tensor((32, 32), dtype="float32") = R.permute_dims(x, axes=[1, 0])
            lv7: R.Tensor((32, 32), dtype="float32") = R.matmul(lv2_1, lv3_2, out_dtype=None)
            lv8_1: R.Tensor((32, 32), dtype="float32") = R.permute_dims(probs, axes=[1, 0])
            probs_adjoint: R.Tensor((32, 32), dtype="float32") = R.matmul(lv6_adjoint, lv7, out_dtype=None)
            v_adjoint: R.Tensor((32, 32), dtype="float32") = R.matmul(lv8_1, lv6_adjoint, out_dtype=None)
            lv9_1: R.Tensor((32, 32), dtype="float32") = R.multiply(probs_adjoint, probs)
            lv10_1: R.Tensor((32, 1), dtype="float32") = R.sum(lv9_1, axis=[-1], keepdims=True)
            lv11: R.Tensor((32, 32), dtype="float32") = R.subtract(probs_adjoint, lv10_1)
            lv4_adjoint: R.Tensor((32, 32), dtype="float32") = R.multiply(lv11, probs)
            lv12: R.Tensor((32, 32), dtype="float32") = R.matmul(x, wk, out_dtype=None)
            lv4_2: R.Tensor((32, 32), dtype="float32") = R.permute_dims(wq, axes=[1, 0])
            lv5_1: R.Tensor((32, 32), dtype="float32") = R.permute_dims(x, axes=[1, 0])
            lv13_1: R.Tensor((32, 32), dtype="float32") = R.matmul(lv4_2, lv5_1, out_dtype=None)
            q_adjoint: R.Tensor((32, 32), dtype="float32") = R.matmul(lv4_adjoint, lv12, out_dtype=None)
            lv6_2: R.Tensor((32, 32), dtype="float32") = R.permute_dims(lv4_adjoint, axes=[1, 0])
            lv7_1: R.Tensor((32, 32), dtype="float32") = R.permute_dims(lv13_1, axes=[1, 0])
            k_adjoint: R.Tensor((32, 32), dtype="float32") = R.matmul(lv6_2, lv7_1, out_dtype=None)
            lv15: R.Tensor((32, 32), dtype="float32") = R.permute_dims(x, axes=[1, 0])
            wv_adjoint: R.Tensor((32, 32), dtype="float32") = R.matmul(lv15, v_adjoint, out_dtype=None)
            lv18: R.Tensor((32, 32), dtype="float32") = R.permute_dims(x, axes=[1, 0])
            wk_adjoint: R.Tensor((32, 32), dtype="float32") = R.matmul(lv18, k_adjoint, out_dtype=None)
            lv21: R.Tensor((32, 32), dtype="float32") = R.permute_dims(x, axes=[1, 0])
            wq_adjoint: R.Tensor((32, 32), dtype="float32") = R.matmul(lv21, q_adjoint, out_dtype=None)
            wq_adjoint_out: R.Tensor((32, 32), dtype="float32") = wq_adjoint
            wk_adjoint_out: R.Tensor((32, 32), dtype="float32") = wk_adjoint
            wv_adjoint_out: R.Tensor((32, 32), dtype="float32") = wv_adjoint
            w1_adjoint_out: R.Tensor((32, 128), dtype="float32") = w1_adjoint
            w2_adjoint_out: R.Tensor((128, 32), dtype="float32") = w2_adjoint
            R.output(loss, wq_adjoint_out, wk_adjoint_out, wv_adjoint_out, w1_adjoint_out, w2_adjoint_out)
        return (loss, (wq_adjoint_out, wk_adjoint_out, wv_adjoint_out, w1_adjoint_out, w2_adjoint_out))