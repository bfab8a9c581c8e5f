# from tvm.script import relax as R

@R.function
def main(x: R.Tensor((2, 3), dtype="float32"), bias: R.Tensor((3,), dtype="float32"), var: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
    R.func_attr({"num_input": 1})
    with R.dataflow():
        a: R.Tensor((2, 3), dtype="float32") = R.exp(x)
        b: R.Tensor((2, 3), dtype="float32") = R.add(bias, a)
        c: R.Tensor((2, 3), dtype="float32") = R.nn.relu(b)
        keep: R.Tensor((2, 3), dtype="float32") = R.negative(c)
        d: R.Tensor((2, 3), dtype="float32") = R.tanh(c)
        eps: R.Tensor((2, 3), dtype="float32") = R.add(var, R.const(1.0000000000000001e-05, "float32"))
        e: R.Tensor((2, 3), dtype="float32") = R.divide(d, eps)
        f: R.Tensor((2, 3), dtype="float32") = R.add(e, keep)
        gv: R.Tensor((2, 3), dtype="bool") = R.greater(f, keep)
        out: R.Tensor((2, 3), dtype="float32") = R.multiply(f, f)
        R.output(out)
    return out
