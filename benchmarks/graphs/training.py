"""Training steps written as programs: forward, backward in reverse, then the SGD updates
(weights minus the scaled gradient), as a person writes them. Backward kernels the op
table does not have (relu's, a conv's) are opaque kernels with the right shapes."""

from __future__ import annotations

from optplan.ir import Const, Program

from .builder import Builder


def _sgd(b: Builder, weights: list[str], grads: list[str]) -> list[str]:
    lr = Const(0.01, "float32")
    return [b.op("subtract", w, b.op("multiply", g, lr)) for w, g in zip(weights, grads)]


def mlp_train(layers: int = 4, batch: int = 64, width: int = 128) -> Program:
    b = Builder()
    x = b.input("x", (batch, width))
    weights = [b.weight(f"w{i}", (width, width)) for i in range(layers)]
    acts, pres = [x], []
    for w in weights:
        pre = b.matmul(acts[-1], w)
        pres.append(pre)
        acts.append(b.relu(pre))
    grad = b.opaque("loss_grad", (acts[-1],), (batch, width))
    grads: list[str] = []
    for i in reversed(range(layers)):
        dz = b.opaque("relu_grad", (grad, pres[i]), (batch, width))
        grads.insert(0, b.matmul(b.transpose(acts[i]), dz))
        if i:
            grad = b.matmul(dz, b.transpose(weights[i]))
    return b.program(*_sgd(b, weights, grads))


def cnn_train(layers: int = 3, channels: int = 8, size: int = 16) -> Program:
    b = Builder()
    x = b.input("x", (1, channels, size, size))
    acts, pres, weights = [x], [], []
    for _ in range(layers):
        pre = b.conv(acts[-1], channels, 3)
        weights.append(b.params[-1].var.name)
        pres.append(pre)
        acts.append(b.relu(pre))
    grad = b.opaque("loss_grad", (acts[-1],), b.shapes[acts[-1]])
    grads: list[str] = []
    for i in reversed(range(layers)):
        dz = b.opaque("relu_grad", (grad, pres[i]), b.shapes[pres[i]])
        grads.insert(0, b.opaque("conv_grad_weight", (acts[i], dz), b.shapes[weights[i]]))
        if i:
            grad = b.opaque("conv_grad_input", (dz, weights[i]), b.shapes[acts[i]])
    return b.program(*_sgd(b, weights, grads))


def transformer_train(seq: int = 32, dim: int = 32) -> Program:
    """One single-head block: attention and a 4x MLP, both residual, then backward."""
    b = Builder()
    x = b.input("x", (seq, dim))
    wq, wk, wv, wo = (b.weight(n, (dim, dim)) for n in ("wq", "wk", "wv", "wo"))
    w1, w2 = b.weight("w1", (dim, 4 * dim)), b.weight("w2", (4 * dim, dim))
    q, k, v = b.matmul(x, wq), b.matmul(x, wk), b.matmul(x, wv)
    scores = b.matmul(q, b.transpose(k))
    probs = b.op("nn.softmax", scores, axis=-1)
    attn = b.matmul(probs, v)
    h = b.add(x, b.matmul(attn, wo))
    up = b.matmul(h, w1)
    act = b.op("nn.gelu", up)
    out = b.add(h, b.matmul(act, w2))
    d_out = b.opaque("loss_grad", (out,), (seq, dim))
    # MLP backward.
    g_w2 = b.matmul(b.transpose(act), d_out)
    d_act = b.matmul(d_out, b.transpose(w2))
    d_up = b.opaque("gelu_grad", (d_act, up), (seq, 4 * dim))
    g_w1 = b.matmul(b.transpose(h), d_up)
    d_h = b.add(d_out, b.matmul(d_up, b.transpose(w1)))
    # Attention backward.
    g_wo = b.matmul(b.transpose(attn), d_h)
    d_attn = b.matmul(d_h, b.transpose(wo))
    d_probs = b.matmul(d_attn, b.transpose(v))
    d_v = b.matmul(b.transpose(probs), d_attn)
    d_scores = b.opaque("softmax_grad", (d_probs, probs), (seq, seq))
    d_q = b.matmul(d_scores, k)
    d_k = b.matmul(b.transpose(d_scores), q)
    grads = [b.matmul(b.transpose(x), d) for d in (d_q, d_k, d_v)]
    return b.program(*_sgd(b, [wq, wk, wv, wo, w1, w2], [*grads, g_wo, g_w1, g_w2]))
