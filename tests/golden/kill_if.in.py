# from tvm.script import relax as R

@R.function
def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
    s: R.Tensor((), dtype="float32") = R.sum(x)
    c: R.Tensor((), dtype="bool") = R.greater(s, R.const(0.0, "float32"))
    a: R.Tensor((4,), dtype="float32") = R.exp(x)
    b: R.Tensor((4,), dtype="float32") = R.negative(x)
    if c:
        y: R.Tensor((4,), dtype="float32") = R.add(a, a)
        r: R.Tensor((4,), dtype="float32") = y
    else:
        r: R.Tensor((4,), dtype="float32") = b
    out: R.Tensor((4,), dtype="float32") = R.multiply(r, x)
    return out
