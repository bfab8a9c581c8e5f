# from tvm.script import relax as R

@R.function
def main(x: R.Tensor((2, 4), dtype="float32"), w: R.Tensor((4, 4), dtype="float32")) -> R.Tensor((2, 4), dtype="float32"):
    R.func_attr({"num_input": 1})
    with R.dataflow():
        lv = R.call_tir(dense, (x, w), out_ty=R.Tensor((2, 4), dtype="float32"))
        lv1 = R.call_tir(relu, (lv,), out_ty=R.Tensor((2, 4), dtype="float32"))
        lv2 = R.reshape(lv1, R.shape([8]))
        lv3 = R.call_tir(dense, (lv, w), out_ty=R.Tensor((2, 4), dtype="float32"))
        lv4 = R.call_tir(mix, (lv2, lv3), out_ty=R.Tensor((2, 4), dtype="float32"))
        lv5 = R.call_tir_inplace(relu, (lv4,), out_ty=R.Tensor((2, 4), dtype="float32"), inplace_indices=[0])
        gv = R.call_tir(dense, (lv5, w), out_ty=R.Tensor((2, 4), dtype="float32"))
        R.output(gv)
    return gv
