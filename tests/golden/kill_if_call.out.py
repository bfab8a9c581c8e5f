# from tvm.script import relax as R

@R.function
def main(x: R.Tensor((4,), dtype="float32"), c: R.Tensor((), dtype="bool")) -> R.Tensor((4,), dtype="float32"):
    a: R.Tensor((4,), dtype="float32") = R.exp(x)
    if c:
        r_value: R.Tensor((4,), dtype="float32") = R.add(a, x)
        R.memory.kill_tensor(a)
        r: R.Tensor((4,), dtype="float32") = r_value
    else:
        R.memory.kill_tensor(a)
        r_value1: R.Tensor((4,), dtype="float32") = R.negative(x)
        r: R.Tensor((4,), dtype="float32") = r_value1
    out: R.Tensor((4,), dtype="float32") = R.multiply(r, x)
    R.memory.kill_tensor(r)
    return out
