# from tvm.script import relax as R

@R.function
def main(x: R.Tensor((2, 4), dtype="float32"), w: R.Tensor((4, 4), dtype="float32")) -> R.Tensor((2, 4), dtype="float32"):
    R.func_attr({"num_input": 1, "relax.force_pure": True})
    storage: R.Any = R.memory.alloc_storage(R.shape([96]), 0, R.str("global"), R.dtype("uint8"))
    lv: R.Tensor((2, 4), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([2, 4]), R.dtype("float32"), 0)
    dense(x, w, lv)
    lv1: R.Tensor((2, 4), dtype="float32") = R.memory.alloc_tensor(storage, 32, R.shape([2, 4]), R.dtype("float32"), 0)
    relu(lv, lv1)
    lv2: R.Tensor((8,), dtype="float32") = R.reshape(lv1, R.shape([8]))
    lv3: R.Tensor((2, 4), dtype="float32") = R.memory.alloc_tensor(storage, 64, R.shape([2, 4]), R.dtype("float32"), 0)
    dense(lv, w, lv3)
    R.memory.kill_tensor(lv)
    lv4: R.Tensor((2, 4), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([2, 4]), R.dtype("float32"), 0)
    R.memory.kill_storage(storage)
    mix(lv2, lv3, lv4)
    R.memory.kill_tensor(lv1)
    R.memory.kill_tensor(lv3)
    relu(lv4)
    lv5: R.Tensor((2, 4), dtype="float32") = lv4
    gv: R.Tensor((2, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), 0, R.str("global"), ty_args=(R.Tensor((2, 4), dtype="float32"),))
    dense(lv5, w, gv)
    R.memory.kill_tensor(lv4)
    return gv
