# A training step of a 3-layer CNN (forward, backward, SGD), as benchmarks/graphs/training.py
# builds it; `optplan run examples/cnn_train.py --capacity 40KiB` computes two activations
# again to fit 40 KiB.
# from tvm.script import relax as R

@R.function
def main(x: R.Tensor((1, 8, 16, 16), dtype="float32"), w1: R.Tensor((8, 8, 3, 3), dtype="float32"), w2: R.Tensor((8, 8, 3, 3), dtype="float32"), w3: R.Tensor((8, 8, 3, 3), dtype="float32")):
    R.func_attr({"num_input": 1})
    with R.dataflow():
        v0: R.Tensor((1, 8, 16, 16), dtype="float32") = R.nn.conv2d(x, w1, padding=[1, 1, 1, 1], strides=[1, 1])
        v1: R.Tensor((1, 8, 16, 16), dtype="float32") = R.nn.relu(v0)
        v2: R.Tensor((1, 8, 16, 16), dtype="float32") = R.nn.conv2d(v1, w2, padding=[1, 1, 1, 1], strides=[1, 1])
        v3: R.Tensor((1, 8, 16, 16), dtype="float32") = R.nn.relu(v2)
        v4: R.Tensor((1, 8, 16, 16), dtype="float32") = R.nn.conv2d(v3, w3, padding=[1, 1, 1, 1], strides=[1, 1])
        v5: R.Tensor((1, 8, 16, 16), dtype="float32") = R.nn.relu(v4)
        v6: R.Tensor((1, 8, 16, 16), dtype="float32") = R.call_tir(loss_grad, (v5,), out_ty=R.Tensor((1, 8, 16, 16), dtype="float32"))
        v7: R.Tensor((1, 8, 16, 16), dtype="float32") = R.call_tir(relu_grad, (v6, v4), out_ty=R.Tensor((1, 8, 16, 16), dtype="float32"))
        v8: R.Tensor((8, 8, 3, 3), dtype="float32") = R.call_tir(conv_grad_weight, (v3, v7), out_ty=R.Tensor((8, 8, 3, 3), dtype="float32"))
        v9: R.Tensor((1, 8, 16, 16), dtype="float32") = R.call_tir(conv_grad_input, (v7, w3), out_ty=R.Tensor((1, 8, 16, 16), dtype="float32"))
        v10: R.Tensor((1, 8, 16, 16), dtype="float32") = R.call_tir(relu_grad, (v9, v2), out_ty=R.Tensor((1, 8, 16, 16), dtype="float32"))
        v11: R.Tensor((8, 8, 3, 3), dtype="float32") = R.call_tir(conv_grad_weight, (v1, v10), out_ty=R.Tensor((8, 8, 3, 3), dtype="float32"))
        v12: R.Tensor((1, 8, 16, 16), dtype="float32") = R.call_tir(conv_grad_input, (v10, w2), out_ty=R.Tensor((1, 8, 16, 16), dtype="float32"))
        v13: R.Tensor((1, 8, 16, 16), dtype="float32") = R.call_tir(relu_grad, (v12, v0), out_ty=R.Tensor((1, 8, 16, 16), dtype="float32"))
        v14: R.Tensor((8, 8, 3, 3), dtype="float32") = R.call_tir(conv_grad_weight, (x, v13), out_ty=R.Tensor((8, 8, 3, 3), dtype="float32"))
        v15: R.Tensor((8, 8, 3, 3), dtype="float32") = R.multiply(v14, R.const(0.01, "float32"))
        v16: R.Tensor((8, 8, 3, 3), dtype="float32") = R.subtract(w1, v15)
        v17: R.Tensor((8, 8, 3, 3), dtype="float32") = R.multiply(v11, R.const(0.01, "float32"))
        v18: R.Tensor((8, 8, 3, 3), dtype="float32") = R.subtract(w2, v17)
        v19: R.Tensor((8, 8, 3, 3), dtype="float32") = R.multiply(v8, R.const(0.01, "float32"))
        v20: R.Tensor((8, 8, 3, 3), dtype="float32") = R.subtract(w3, v19)
        R.output(v16, v18, v20)
    return v16, v18, v20
