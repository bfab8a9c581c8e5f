# from tvm.script import relax as R

@R.function
def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
    s: R.Tensor((), dtype="float32") = R.sum(x)
    c: R.Tensor((), dtype="bool") = R.greater(s, R.const(0.0, "float32"))
    R.memory.kill_tensor(s)
    a: R.Tensor((4,), dtype="float32") = R.exp(x)
    b: R.Tensor((4,), dtype="float32") = R.negative(x)
    if c:
        R.memory.kill_tensor(b)
        R.memory.kill_tensor(c)
        y: R.Tensor((4,), dtype="float32") = R.add(a, a)
        R.memory.kill_tensor(a)
        r: R.Tensor((4,), dtype="float32") = y
    else:
        R.memory.kill_tensor(a)
        R.memory.kill_tensor(c)
        r: R.Tensor((4,), dtype="float32") = b
    out: R.Tensor((4,), dtype="float32") = R.multiply(r, x)
    R.memory.kill_tensor(r)
    return out
