# A pre-LayerNorm transformer decoder block whose sequence length n is symbolic, as TVM
# prints a module compiled for any length up to a bound: tir_var_upper_bound gives n at most
# 2048, so every tensor is planned at n = 2048 (StaticPlanBlockMemory's rule) and
# `optplan run examples/transformer_block_dynamic.py --dim n=17` replays at n = 17 inside
# the same arena. Causal self-attention (4 heads of 64) and a GELU MLP, width 256, fp32.
# from tvm.script import ir as I
# from tvm.script import relax as R
# from tvm.script import tir as T

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, "n", 256), dtype="float32"), ln1_w: R.Tensor((256,), dtype="float32"), ln1_b: R.Tensor((256,), dtype="float32"), qkv_w: R.Tensor((256, 768), dtype="float32"), qkv_b: R.Tensor((768,), dtype="float32"), proj_w: R.Tensor((256, 256), dtype="float32"), proj_b: R.Tensor((256,), dtype="float32"), ln2_w: R.Tensor((256,), dtype="float32"), ln2_b: R.Tensor((256,), dtype="float32"), fc1_w: R.Tensor((256, 1024), dtype="float32"), fc1_b: R.Tensor((1024,), dtype="float32"), fc2_w: R.Tensor((1024, 256), dtype="float32"), fc2_b: R.Tensor((256,), dtype="float32")) -> R.Tensor((1, "n", 256), dtype="float32"):
        n = T.int64()
        R.func_attr({"num_input": 1, "tir_var_upper_bound": {"n": 2048}})
        with R.dataflow():
            ln1: R.Tensor((1, n, 256), dtype="float32") = R.nn.layer_norm(x, ln1_w, ln1_b, axes=[-1], epsilon=1.0000000000000001e-05, center=True, scale=True)
            qkv_mm: R.Tensor((1, n, 768), dtype="float32") = R.matmul(ln1, qkv_w, out_dtype=None)
            qkv: R.Tensor((1, n, 768), dtype="float32") = R.add(qkv_mm, qkv_b)
            qkv_split: R.Tuple(R.Tensor((1, n, 256), dtype="float32"), R.Tensor((1, n, 256), dtype="float32"), R.Tensor((1, n, 256), dtype="float32")) = R.split(qkv, indices_or_sections=3, axis=2)
            q_flat: R.Tensor((1, n, 256), dtype="float32") = qkv_split[0]
            q_heads: R.Tensor((1, n, 4, 64), dtype="float32") = R.reshape(q_flat, R.shape([1, n, 4, 64]))
            k_flat: R.Tensor((1, n, 256), dtype="float32") = qkv_split[1]
            k_heads: R.Tensor((1, n, 4, 64), dtype="float32") = R.reshape(k_flat, R.shape([1, n, 4, 64]))
            v_flat: R.Tensor((1, n, 256), dtype="float32") = qkv_split[2]
            v_heads: R.Tensor((1, n, 4, 64), dtype="float32") = R.reshape(v_flat, R.shape([1, n, 4, 64]))
            q_t: R.Tensor((1, 4, n, 64), dtype="float32") = R.permute_dims(q_heads, axes=[0, 2, 1, 3])
            k_t: R.Tensor((1, 4, 64, n), dtype="float32") = R.permute_dims(k_heads, axes=[0, 2, 3, 1])
            v_t: R.Tensor((1, 4, n, 64), dtype="float32") = R.permute_dims(v_heads, axes=[0, 2, 1, 3])
            scores: R.Tensor((1, 4, n, n), dtype="float32") = R.matmul(q_t, k_t, out_dtype=None)
            scaled: R.Tensor((1, 4, n, n), dtype="float32") = R.multiply(scores, R.const(0.125, "float32"))
            mask_full: R.Tensor((n, n), dtype="float32") = R.full(R.shape([n, n]), R.const(-1000000000.0, "float32"), dtype="float32")
            mask: R.Tensor((n, n), dtype="float32") = R.triu(mask_full, k=1)
            masked: R.Tensor((1, 4, n, n), dtype="float32") = R.add(scaled, mask)
            probs: R.Tensor((1, 4, n, n), dtype="float32") = R.nn.softmax(masked, axis=-1)
            attn: R.Tensor((1, 4, n, 64), dtype="float32") = R.matmul(probs, v_t, out_dtype=None)
            attn_t: R.Tensor((1, n, 4, 64), dtype="float32") = R.permute_dims(attn, axes=[0, 2, 1, 3])
            attn_flat: R.Tensor((1, n, 256), dtype="float32") = R.reshape(attn_t, R.shape([1, n, 256]))
            proj_mm: R.Tensor((1, n, 256), dtype="float32") = R.matmul(attn_flat, proj_w, out_dtype=None)
            proj: R.Tensor((1, n, 256), dtype="float32") = R.add(proj_mm, proj_b)
            resid1: R.Tensor((1, n, 256), dtype="float32") = R.add(x, proj)
            ln2: R.Tensor((1, n, 256), dtype="float32") = R.nn.layer_norm(resid1, ln2_w, ln2_b, axes=[-1], epsilon=1.0000000000000001e-05, center=True, scale=True)
            fc1_mm: R.Tensor((1, n, 1024), dtype="float32") = R.matmul(ln2, fc1_w, out_dtype=None)
            fc1: R.Tensor((1, n, 1024), dtype="float32") = R.add(fc1_mm, fc1_b)
            act: R.Tensor((1, n, 1024), dtype="float32") = R.nn.gelu(fc1)
            fc2_mm: R.Tensor((1, n, 256), dtype="float32") = R.matmul(act, fc2_w, out_dtype=None)
            fc2: R.Tensor((1, n, 256), dtype="float32") = R.add(fc2_mm, fc2_b)
            gv: R.Tensor((1, n, 256), dtype="float32") = R.add(resid1, fc2)
            R.output(gv)
        return gv
