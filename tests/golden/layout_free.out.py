# from tvm.script import ir as I
# from tvm.script import tir as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func
    def fused_dense(x: T.handle):
        T.evaluate(0)

    @T.prim_func
    def fused_relu(x: T.handle):
        T.evaluate(0)

    @R.function
    def main(x: R.Tensor((2, 4), dtype="float32"), w: R.Tensor((4, 4), dtype="float32"), b: R.Tensor((4,), dtype="float32")) -> R.Tensor((2, 4), dtype="float32"):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            w2: R.Tensor((4, 4), dtype="float32") = w
            lv = R.call_tir(cls.fused_dense, (x, w2, b, metadata["ir.GenericConst"][0]), out_ty=R.Tensor((2, 4), dtype="float32"), layout_free_buffers=[1, 2, 3])
            lv1 = R.call_tir(cls.fused_relu, (lv,), out_ty=R.Tensor((2, 4), dtype="float32"))
            R.output(lv1)
        return lv1
