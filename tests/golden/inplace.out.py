# from tvm.script import relax as R

@R.function
def main(x: R.Tensor((2, 3), dtype="float32"), bias: R.Tensor((3,), dtype="float32"), var: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
    R.func_attr({"num_input": 1})
    with R.dataflow():
        a: R.Tensor((2, 3), dtype="float32") = R.exp(x)
        b: R.Tensor((2, 3), dtype="float32") = R.add(bias, a, inplace_indices=[1])
        c: R.Tensor((2, 3), dtype="float32") = R.nn.relu(b, inplace_indices=[0])
        keep: R.Tensor((2, 3), dtype="float32") = R.negative(c)
        d: R.Tensor((2, 3), dtype="float32") = R.tanh(c, inplace_indices=[0])
        eps: R.Tensor((2, 3), dtype="float32") = R.add(var, R.const(1.0000000000000001e-05, "float32"))
        e: R.Tensor((2, 3), dtype="float32") = R.divide(d, eps, inplace_indices=[0])
        f: R.Tensor((2, 3), dtype="float32") = R.add(e, keep, inplace_indices=[0])
        gv: R.Tensor((2, 3), dtype="bool") = R.greater(f, keep)
        out: R.Tensor((2, 3), dtype="float32") = R.multiply(f, f, inplace_indices=[0])
        R.output(out)
    return out
