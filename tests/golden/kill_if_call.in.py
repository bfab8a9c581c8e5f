# from tvm.script import relax as R

@R.function
def main(x: R.Tensor((4,), dtype="float32"), c: R.Tensor((), dtype="bool")) -> R.Tensor((4,), dtype="float32"):
    a: R.Tensor((4,), dtype="float32") = R.exp(x)
    if c:
        r: R.Tensor((4,), dtype="float32") = R.add(a, x)
    else:
        r: R.Tensor((4,), dtype="float32") = R.negative(x)
    out: R.Tensor((4,), dtype="float32") = R.multiply(r, x)
    return out
