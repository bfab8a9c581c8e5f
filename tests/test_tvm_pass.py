"""optplan.tvm.PlanBlockMemory inside TVM's own pipeline, judged by running.

- Six models built with TVM (an MLP, GPT-2-style and fp16 LLaMA-style decoders from
  `relax.frontend.nn`; ResNet-50, MobileNetV2 and a UNet through TVM's ONNX frontend), at
  tiny sizes: lowered by TVM's CPU pipeline, planned both ways, built with LLVM and run in
  the Relax VM on the same arguments. The outputs must be the same bytes, optplan's one
  storage no larger than TVM's storages, and its size the optimum cpsat proved.
- The arena is real: a plan that overlaps two live tensors (forced past the validator)
  changes the outputs, so no tensor quietly lives in memory of its own.
- Random graphs (hypothesis): the offsets written into TVM's IR, read back from it, pass
  the independent validator on the problem of TVM's own planned function.
- `pipeline()` is TVM's CPU pipeline with the swap made; a symbolic function keeps TVM's
  plan with a warning; an alignment the runtime cannot honour is refused.

Skipped without apache-tvm 0.27 (the `tvm` extra).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

tvm = pytest.importorskip("tvm", reason="apache-tvm is not installed (pip install -e '.[tvm]')")
if not tvm.__version__.startswith("0.27"):
    pytest.skip(f"written for TVM 0.27, found {tvm.__version__}", allow_module_level=True)

from tvm import relax

import optplan.integrations.tvm as otvm
from optplan.frontends.script import parse
from optplan.ir import Program
from optplan.problem.plan import Plan, Status, validate
from optplan.runtime.check import extract_plan

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tvm_models

TARGET = tvm.target.Target("llvm")
_COMPILED: dict[str, tvm_models.Compiled] = {}


def compiled(name: str) -> tvm_models.Compiled:
    """Each model compiled both ways once per session (the corpus test reuses them)."""
    if name not in _COMPILED:
        with warnings.catch_warnings():
            warnings.simplefilter("error", otvm.PlanWarning)
            model = tvm_models.BUILDERS[name]("tiny")
            _COMPILED[name] = tvm_models.compile_both(model, time_limit=10)
    return _COMPILED[name]


@pytest.mark.parametrize("name", sorted(tvm_models.BUILDERS))
def test_model_runs_the_same_in_optplans_proven_optimal_storage(name: str) -> None:
    result = compiled(name)
    assert result.same_outputs
    (report,) = result.reports
    assert report.kept is None
    assert report.status == Status.OPTIMAL.value
    assert result.optplan_bytes == report.arena_bytes == report.bound_bytes
    assert result.optplan_bytes <= result.tvm_bytes


def _all_at_zero(problem: Any) -> Plan:
    """A wrong plan: every tensor at offset 0."""
    arena = max(b.size for b in problem.buffers)
    offsets = {b.id: 0 for b in problem.buffers}
    return Plan(offsets, arena, Status.FEASIBLE, "wrong", 0)


def test_an_overlapping_plan_changes_the_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    model = tvm_models.mlp("tiny")
    low = tvm_models.lowered(model.mod, TARGET)
    monkeypatch.setattr(otvm, "_planner", lambda options: _all_at_zero)
    monkeypatch.setattr(otvm, "_fault", lambda problem, plan, tvm_bytes: None)
    wrong, _ = otvm.plan_module(low)
    right = tvm_models.finalized(low, TARGET, planned=False)
    expected = tvm_models.run(right, TARGET, model.args)
    got = tvm_models.run(tvm_models.finalized(wrong, TARGET, planned=True), TARGET, model.args)
    assert expected[0].tobytes() != got[0].tobytes()


def test_pipeline_is_tvms_with_the_planner_swapped() -> None:
    model = tvm_models.mlp("tiny")
    executable = tvm.compile(model.mod, TARGET, relax_pipeline=otvm.pipeline(TARGET, time_limit=5))
    vm = relax.VirtualMachine(executable, tvm.cpu())
    out = vm["main"](*[tvm.runtime.tensor(a) for a in model.args]).numpy()
    reference = tvm.compile(model.mod, TARGET)
    expected = relax.VirtualMachine(reference, tvm.cpu())["main"](
        *[tvm.runtime.tensor(a) for a in model.args]
    ).numpy()
    assert out.tobytes() == expected.tobytes()
    with pytest.raises(ValueError, match="no StaticPlanBlockMemory"):
        otvm.swap_in([relax.transform.KillAfterLastUse()], otvm.PlanBlockMemory())


def test_symbolic_function_keeps_tvms_plan_with_a_warning() -> None:
    from tvm.relax.frontend import nn

    layers = nn.ModuleList([nn.Linear(8, 16), nn.Linear(16, 8)])

    class Net(nn.Module):
        def __init__(self) -> None:
            self.layers = layers

        def forward(self, x: Any) -> Any:
            return self.layers[1](nn.op.relu(self.layers[0](x)))

    mod, _ = Net().export_tvm(spec={"forward": {"x": nn.spec.Tensor(("n", 8), "float32")}})
    low = tvm_models.lowered(mod, TARGET)
    with pytest.warns(otvm.PlanWarning, match="forward: kept TVM's plan: symbolic shapes"):
        planned, reports = otvm.plan_module(low)
    assert [r.kept for r in reports] == ["symbolic shapes (planned by TVM's rule)"]
    tvm.compile(tvm_models.finalized(planned, TARGET, planned=True), TARGET, relax_pipeline=None)


def test_alignment_the_runtime_cannot_honour_is_refused() -> None:
    with pytest.raises(ValueError, match="multiple of 64"):
        otvm.PlanBlockMemory(alignment=16)
    with pytest.raises(ValueError, match="unknown planner"):
        otvm.PlanBlockMemory(planner="best")


# ---------------------------------------------------------------------------- random graphs

WIDTHS = (8, 16, 32)


@st.composite
def graphs(draw: st.DrawFn) -> tvm.IRModule:
    """A random chain-with-branches of matmuls, ReLUs, adds, reshapes (views) and
    split/concat (tuples) on float32 [4, w] tensors, returned as one tensor."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([4, 8], "float32"))
    params = [x]
    with bb.function("main"):
        with bb.dataflow():
            values = [x]
            for step in range(draw(st.integers(2, 9))):
                kind = draw(st.sampled_from(["matmul", "relu", "add", "reshape", "split"]))
                src = values[draw(st.integers(0, len(values) - 1))]
                width = int(src.ty.shape.values[1])
                if kind == "matmul":
                    out = draw(st.sampled_from(WIDTHS))
                    w = relax.Var(f"w{step}", relax.TensorType([width, out], "float32"))
                    params.append(w)
                    value = bb.emit(relax.op.matmul(src, w))
                elif kind == "relu":
                    value = bb.emit(relax.op.nn.relu(src))
                elif kind == "add":
                    same = [v for v in values if int(v.ty.shape.values[1]) == width]
                    value = bb.emit(relax.op.add(src, same[draw(st.integers(0, len(same) - 1))]))
                elif kind == "reshape":
                    flat = bb.emit(relax.op.reshape(src, [4 * width]))
                    value = bb.emit(relax.op.reshape(relax.op.nn.relu(flat), [4, width]))
                else:
                    halves = bb.emit(relax.op.split(src, 2, axis=1))
                    value = bb.emit(relax.op.concat([halves[1], halves[0]], axis=1))
                values.append(value)
            out = bb.emit_output(relax.op.nn.relu(values[-1]))
        bb.emit_func_output(out, params)
    return bb.get()


def _written_offsets(func: relax.Function) -> list[int]:
    """The offsets of every `alloc_tensor` on the one storage, read off TVM's IR."""
    return [int(call.args[1].value) for call in _carve_calls(func.body)]


def _carve_calls(seq: relax.SeqExpr) -> list[Any]:
    return [
        b.value
        for block in seq.blocks
        for b in block.bindings
        if isinstance(b.value, relax.Call)
        and getattr(b.value.op, "name", "") == "relax.memory.alloc_tensor"
    ]


@settings(max_examples=12, deadline=None)
@given(graphs())
def test_offsets_written_into_tvms_ir_pass_the_validator(mod: tvm.IRModule) -> None:
    low = tvm_models.lowered(mod, TARGET)
    theirs = relax.transform.StaticPlanBlockMemory()(low)
    planned, reports = otvm.plan_module(low, otvm.Options(time_limit=5))
    if not reports:  # nothing to plan (every value is returned or a parameter)
        return
    (report,) = reports
    assert report.kept is None, report.kept
    text = theirs["main"].script(show_meta=False)
    problem, _ = extract_plan(Program(parse(text).functions[:1]))
    offsets = _written_offsets(planned["main"])
    storages = otvm.storage_bytes(planned)
    assert len(offsets) == len(problem.buffers) and len(storages) == 1
    realigned = type(problem)(
        tuple(b.__class__(b.id, b.size, b.live, 64, None, b.dtype) for b in problem.buffers)
    )
    plan = Plan(
        {b.id: off for b, off in zip(problem.buffers, offsets)},
        storages["main"],
        Status.FEASIBLE,
        "written",
        0,
    )
    assert validate(realigned, plan) == []
    assert storages["main"] <= otvm.storage_bytes(theirs)["main"]
