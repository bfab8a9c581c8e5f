# from tvm.script import relax as R

@R.function
def main(x: R.Tensor((4,), dtype="float32"), w: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
    R.func_attr({"num_input": 1})
    a: R.Tensor((4,), dtype="float32") = R.exp(x)
    b: R.Tensor((4,), dtype="float32") = a
    c: R.Tensor((2, 2), dtype="float32") = R.reshape(b, R.shape([2, 2]))
    d: R.Tensor((4,), dtype="float32") = R.negative(w)
    t: R.Tuple(R.Tensor((2, 2), dtype="float32"), R.Tensor((4,), dtype="float32")) = c, d
    e: R.Tensor((4,), dtype="float32") = t[1]
    f: R.Tensor((4,), dtype="float32") = R.add(e, w)
    R.memory.kill_tensor(d)
    g: R.Tensor((), dtype="float32") = R.sum(c)
    R.memory.kill_tensor(a)
    unused: R.Tensor((4,), dtype="float32") = R.exp(w)
    R.memory.kill_tensor(unused)
    h: R.Tensor((4,), dtype="float32") = R.multiply(f, g)
    R.memory.kill_tensor(f)
    R.memory.kill_tensor(g)
    return h
