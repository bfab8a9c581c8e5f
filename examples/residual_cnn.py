# A small residual CNN in high-level Relax, written as TVM 0.27 prints a module before
# LegalizeOps: a 3x3 stem, an identity residual block and a strided block with a 1x1
# projection, global average pooling and a linear head. Input 1x3x32x32, fp32.
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 3, 32, 32), dtype="float32"), stem_w: R.Tensor((16, 3, 3, 3), dtype="float32"), b1_w1: R.Tensor((16, 16, 3, 3), dtype="float32"), b1_w2: R.Tensor((16, 16, 3, 3), dtype="float32"), b2_w1: R.Tensor((32, 16, 3, 3), dtype="float32"), b2_w2: R.Tensor((32, 32, 3, 3), dtype="float32"), b2_proj: R.Tensor((32, 16, 1, 1), dtype="float32"), fc_w: R.Tensor((10, 32), dtype="float32"), fc_b: R.Tensor((10,), dtype="float32")) -> R.Tensor((1, 10), dtype="float32"):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            stem: R.Tensor((1, 16, 32, 32), dtype="float32") = R.nn.conv2d(x, stem_w, strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype=None)
            stem_relu: R.Tensor((1, 16, 32, 32), dtype="float32") = R.nn.relu(stem)
            b1_c1: R.Tensor((1, 16, 32, 32), dtype="float32") = R.nn.conv2d(stem_relu, b1_w1, strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype=None)
            b1_r1: R.Tensor((1, 16, 32, 32), dtype="float32") = R.nn.relu(b1_c1)
            b1_c2: R.Tensor((1, 16, 32, 32), dtype="float32") = R.nn.conv2d(b1_r1, b1_w2, strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype=None)
            b1_sum: R.Tensor((1, 16, 32, 32), dtype="float32") = R.add(b1_c2, stem_relu)
            b1_out: R.Tensor((1, 16, 32, 32), dtype="float32") = R.nn.relu(b1_sum)
            b2_c1: R.Tensor((1, 32, 16, 16), dtype="float32") = R.nn.conv2d(b1_out, b2_w1, strides=[2, 2], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype=None)
            b2_r1: R.Tensor((1, 32, 16, 16), dtype="float32") = R.nn.relu(b2_c1)
            b2_c2: R.Tensor((1, 32, 16, 16), dtype="float32") = R.nn.conv2d(b2_r1, b2_w2, strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype=None)
            b2_skip: R.Tensor((1, 32, 16, 16), dtype="float32") = R.nn.conv2d(b1_out, b2_proj, strides=[2, 2], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype=None)
            b2_sum: R.Tensor((1, 32, 16, 16), dtype="float32") = R.add(b2_c2, b2_skip)
            b2_out: R.Tensor((1, 32, 16, 16), dtype="float32") = R.nn.relu(b2_sum)
            pooled: R.Tensor((1, 32), dtype="float32") = R.mean(b2_out, axis=[2, 3], keepdims=False)
            fc_wt: R.Tensor((32, 10), dtype="float32") = R.permute_dims(fc_w, axes=[1, 0])
            logits: R.Tensor((1, 10), dtype="float32") = R.matmul(pooled, fc_wt, out_dtype=None)
            gv: R.Tensor((1, 10), dtype="float32") = R.add(logits, fc_b)
            R.output(gv)
        return gv
