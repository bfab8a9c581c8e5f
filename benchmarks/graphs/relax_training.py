"""Training steps written by TVM itself: a forward function in Relax, differentiated by
Relax's own gradient pass (`relax.transform.Gradient`), printed by TVM's printer. The
adjoint function (forward, then backward in TVM's order) becomes `main`: the program
optplan reorders. Needs the `tvm` extra.

    .venv/bin/python benchmarks/graphs/relax_training.py tests/data/training

writes `mlp_train.py`, `resmlp_train.py` and `attention_train.py` there (kept small, for
the tests; the benchmark reads the same files).
"""

from __future__ import annotations

import sys
from pathlib import Path


def _forwards() -> dict[str, object]:
    from tvm.script import ir as I
    from tvm.script import relax as R

    @I.ir_module
    class Mlp:
        @R.function
        def main(
            x: R.Tensor((16, 64), "float32"), w0: R.Tensor((64, 128), "float32"),
            w1: R.Tensor((128, 128), "float32"), w2: R.Tensor((128, 128), "float32"),
            w3: R.Tensor((128, 10), "float32"), y: R.Tensor((16, 10), "float32"),
        ):  # fmt: skip
            with R.dataflow():
                h0 = R.nn.relu(R.matmul(x, w0))
                h1 = R.nn.relu(R.matmul(h0, w1))
                h2 = R.nn.relu(R.matmul(h1, w2))
                diff = R.subtract(R.matmul(h2, w3), y)
                loss = R.sum(R.multiply(diff, diff))
                R.output(loss)
            return loss

    @I.ir_module
    class ResMlp:
        # Residual blocks: every block's input is read again by the backward pass of
        # the block above it, which is where the order of the backward ops matters.
        # (No convolution: the gradient of conv2d is written in the CNHW layout, which
        # optplan's op table does not run.)
        @R.function
        def main(
            x: R.Tensor((32, 64), "float32"), w0: R.Tensor((64, 256), "float32"),
            v0: R.Tensor((256, 64), "float32"), w1: R.Tensor((64, 256), "float32"),
            v1: R.Tensor((256, 64), "float32"), w2: R.Tensor((64, 256), "float32"),
            v2: R.Tensor((256, 64), "float32"), y: R.Tensor((32, 64), "float32"),
        ):  # fmt: skip
            with R.dataflow():
                h0 = R.add(x, R.matmul(R.nn.relu(R.matmul(x, w0)), v0))
                h1 = R.add(h0, R.matmul(R.nn.relu(R.matmul(h0, w1)), v1))
                h2 = R.add(h1, R.matmul(R.nn.relu(R.matmul(h1, w2)), v2))
                diff = R.subtract(h2, y)
                loss = R.sum(R.multiply(diff, diff))
                R.output(loss)
            return loss

    @I.ir_module
    class Attention:
        @R.function
        def main(
            x: R.Tensor((32, 32), "float32"), wq: R.Tensor((32, 32), "float32"),
            wk: R.Tensor((32, 32), "float32"), wv: R.Tensor((32, 32), "float32"),
            w1: R.Tensor((32, 128), "float32"), w2: R.Tensor((128, 32), "float32"),
            y: R.Tensor((32, 32), "float32"),
        ):  # fmt: skip
            with R.dataflow():
                q = R.matmul(x, wq)
                k = R.matmul(x, wk)
                v = R.matmul(x, wv)
                probs = R.nn.softmax(R.matmul(q, R.permute_dims(k)), axis=-1)
                h = R.add(x, R.matmul(probs, v))
                out = R.add(h, R.matmul(R.nn.relu(R.matmul(h, w1)), w2))
                diff = R.subtract(out, y)
                loss = R.sum(R.multiply(diff, diff))
                R.output(loss)
            return loss

    return {"mlp_train": Mlp, "resmlp_train": ResMlp, "attention_train": Attention}


def training_script(module: object) -> str:
    """The adjoint of `module`'s main with respect to every parameter but the first and
    the last (the input and the target), printed as a module whose main it is."""
    import tvm
    from tvm import relax

    main = module["main"]  # type: ignore[index]
    grads = relax.transform.Gradient("main", require_grads=list(main.params[1:-1]))(module)
    adjoint = grads["main_adjoint"].with_attr("global_symbol", "main")
    return str(tvm.IRModule({"main": adjoint}).script())


def main() -> None:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/training")
    folder.mkdir(parents=True, exist_ok=True)
    for name, module in _forwards().items():
        (folder / f"{name}.py").write_text(training_script(module))
        print(f"written {folder / name}.py")


if __name__ == "__main__":
    main()
