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
- `pipeline()` is TVM's CPU pipeline with the swap made; an alignment the runtime cannot
  honour is refused.
- Symbolic lengths: GPT-2- and LLaMA-style decoders (prefill and decode with a KV cache,
  fp32 and fp16) planned at their bounds, run in the VM at lengths up to them, the same
  bytes as TVM's plan, the arena the one the same function gets with its lengths fixed
  at the bounds. What stays TVM's (sizes without a bound, data-dependent shapes, returned
  tensors, packed calls and their runtime objects) is named with its reason, and a
  function kept whole carries no bound. Random symbolic graphs (hypothesis) at random
  bounds run the same at random lengths.

Skipped without apache-tvm 0.27 (the `tvm` extra).
"""

from __future__ import annotations

import dataclasses
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
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
from optplan.problem import Problem
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
    # Like for like: TVM's default CPU pipeline (tvm.compile's own default runs no fusion).
    reference = tvm.compile(model.mod, TARGET, relax_pipeline=relax.get_default_pipeline(TARGET))
    expected = relax.VirtualMachine(reference, tvm.cpu())["main"](
        *[tvm.runtime.tensor(a) for a in model.args]
    ).numpy()
    assert out.tobytes() == expected.tobytes()
    with pytest.raises(ValueError, match="no StaticPlanBlockMemory"):
        otvm.swap_in([relax.transform.KillAfterLastUse()], otvm.PlanBlockMemory())


def test_tensors_without_a_bound_stay_tvms_with_a_warning_naming_them() -> None:
    from tvm.relax.frontend import nn

    layers = nn.ModuleList([nn.Linear(8, 16), nn.Linear(16, 8)])

    class Net(nn.Module):
        def __init__(self) -> None:
            self.layers = layers

        def forward(self, x: Any) -> Any:
            return self.layers[1](nn.op.relu(self.layers[0](x)))

    mod, _ = Net().export_tvm(spec={"forward": {"x": nn.spec.Tensor(("n", 8), "float32")}})
    low = tvm_models.lowered(mod, TARGET)
    warning = r"forward: left on TVM's storages, sizes without an upper bound: alloc1 \(n, 16\)"
    with pytest.warns(otvm.PlanWarning, match=warning):
        planned, (report,) = otvm.plan_module(low)
    assert report.kept is None and report.tensors == 2  # the two transposed weights
    assert [(left.name, left.kind) for left in report.left] == [
        ("alloc1", "unbounded"),
        ("alloc3", "returned"),
    ]
    assert 'add R.func_attr({"tir_var_upper_bound": {"n": ...}})' in report.why("alloc1")
    args = tvm_models._args(low["forward"].params[1:])
    executables = [
        tvm.compile(tvm_models.finalized(m, TARGET, planned=p), TARGET, relax_pipeline=None)
        for m, p in ((low, False), (planned, True))
    ]
    for rows in (3, 40):
        x = np.random.default_rng(rows).standard_normal((rows, 8)).astype("float32")
        outs = [
            relax.VirtualMachine(e, tvm.cpu())["forward"](
                *[tvm.runtime.tensor(a) for a in (x, *args)]
            ).numpy()
            for e in executables
        ]
        assert outs[0].tobytes() == outs[1].tobytes()


# ---------------------------------------------------------------------------- symbolic lengths

BOUND = 64
LENGTHS = (1, 17, BOUND)


@pytest.mark.parametrize("arch, dtype", [("gpt2", "float32"), ("llama", "float16")])
def test_decoder_planned_at_its_bounds_runs_the_same_at_every_length(arch: str, dtype: str) -> None:
    model = tvm_models.decoder(arch, dtype, BOUND)
    with warnings.catch_warnings():
        warnings.simplefilter("error", otvm.PlanWarning)
        both = tvm_models.decoder_both(model)
    for function, symbol in tvm_models.DECODER_FUNCTIONS.items():
        report = both.reports[function]
        assert report.kept is None, report.kept
        assert report.bounds == ((symbol, BOUND),)
        assert report.status == Status.OPTIMAL.value
        assert both.optplan_bytes[function] == report.arena_bytes == report.bound_bytes
        assert report.arena_bytes <= both.tvm_bytes[function] == report.tvm_bytes
        fixed = tvm_models.fixed_at_bound(model, function)
        assert fixed.arena_bytes == report.arena_bytes and fixed.tvm_bytes == report.tvm_bytes
        kinds = {left.kind for left in report.left}
        assert kinds == {"returned", "runtime"}  # the logits; the KV caches and their views
        assert "vm.builtin.attention_kv_cache_view" in report.why()
        for length in LENGTHS:
            assert both.same_at(function, length), (function, length)


def _data_dependent() -> tvm.IRModule:
    """x[n, 8] with n <= 64, y[m, 8] with m unbounded, and z[k, 8] where k comes from
    data (a tensor's values, `R.match_cast`); the three reduced to one [8] result, and one
    tensor through a packed call TVM cannot see through."""
    from tvm import tirx

    bb = relax.BlockBuilder()
    n, m, k = (tirx.Var(name, "int64") for name in "nmk")
    x = relax.Var("x", relax.TensorType([n, 8], "float32"))
    y = relax.Var("y", relax.TensorType([m, 8], "float32"))
    t = relax.Var("t", relax.TensorType([1], "int64"))
    with bb.function("main", [x, y, t], attrs={"tir_var_upper_bound": {"n": BOUND}}):
        a = bb.emit(relax.op.exp(relax.op.nn.relu(x)))
        b = bb.emit(relax.op.exp(relax.op.nn.relu(y)))
        bb.match_cast(relax.op.tensor_to_shape(t), relax.ShapeType([k]))
        c = bb.emit(relax.op.exp(relax.op.zeros(relax.ShapeExpr([k, 8]), "float32")))
        sums = [bb.emit(relax.op.sum(v, axis=[0])) for v in (a, b, c)]
        out = bb.emit(relax.op.add(relax.op.add(sums[0], sums[1]), sums[2]))
        bb.emit_func_output(out)
    return bb.get()


def test_what_stays_tvms_is_named_with_its_reason_and_runs() -> None:
    low = tvm_models.lowered(_data_dependent(), TARGET)
    with pytest.warns(otvm.PlanWarning, match=r"alloc4 \(k, 8\) float32 \(from data\)"):
        planned, (report,) = otvm.plan_module(low)
    assert report.kept is None and report.bounds == (("n", BOUND),)
    kinds = {left.name: left.kind for left in report.left}
    assert kinds == {
        "alloc2": "unbounded",
        "alloc3": "unbounded",
        "alloc4": "data-dependent",
        "alloc5": "data-dependent",
        "alloc10": "returned",
    }
    assert "k is defined in the function's body" in report.why("alloc4")
    assert report.why("alloc") == "main: alloc: planned by optplan in its arena"
    with pytest.raises(KeyError, match="no tensor 'gv'"):
        report.why("gv")
    executables = [
        tvm.compile(tvm_models.finalized(m, TARGET, planned=p), TARGET, relax_pipeline=None)
        for m, p in ((low, False), (planned, True))
    ]
    for length in LENGTHS:
        rng = np.random.default_rng(length)
        x = rng.standard_normal((length, 8)).astype("float32")
        y = rng.standard_normal((length + 70, 8)).astype("float32")
        args = [tvm.runtime.tensor(a) for a in (x, y, np.array([length + 3], "int64"))]
        outs = [relax.VirtualMachine(e, tvm.cpu())["main"](*args).numpy() for e in executables]
        assert outs[0].tobytes() == outs[1].tobytes()


def test_a_call_tvm_cannot_see_through_is_named() -> None:
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([4, 8], "float32"))
    with bb.function("main", [x]):
        a = bb.emit(relax.op.exp(relax.op.nn.relu(x)))
        ty = relax.TensorType([4, 8], "float32")
        b = bb.emit(relax.op.call_builtin_with_ctx("vm.builtin.keep", (a,), ty_args=ty))
        bb.emit_func_output(relax.op.sum(relax.op.exp(b)))
    _, (report,) = otvm.plan_module(tvm_models.lowered(bb.get(), TARGET))
    assert report.kept is None and report.tensors == 2
    reasons = {left.kind: left.reason for left in report.left}
    assert set(reasons) == {"opaque call", "runtime", "returned"}
    assert reasons["opaque call"].startswith("passed to the packed function vm.builtin.keep")


def test_a_function_kept_whole_carries_no_bound() -> None:
    """A parameter of unknown shape (optplan's reader plans known shapes only): TVM's plan
    is kept, and the report says so without a bound that would read as proven."""
    from tvm import tirx

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType(None, "float32", ndim=2))
    with bb.function("main", [x]):
        cast = bb.match_cast(x, relax.TensorType([tirx.Var("n", "int64"), 8], "float32"))
        a = bb.emit(relax.op.sum(relax.op.exp(cast), axis=[0]))
        bb.emit_func_output(relax.op.sum(relax.op.exp(a)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, (report,) = otvm.plan_module(tvm_models.lowered(bb.get(), TARGET))
    assert [str(w.message).split(":")[:2] for w in caught] == [
        ["main", " kept TVM's plan"],
        ["main", " left on TVM's storages, sizes without an upper bound"],
    ]
    assert report.lower_bound_bytes is None and report.bound_bytes is None
    assert report.arena_bytes == report.tvm_bytes > 0
    assert report.why().startswith("main: kept TVM's plan: optplan cannot read it")
    assert {left.kind for left in report.left} == {"data-dependent", "returned"}


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
    (report,) = reports
    if report.kept == otvm.NOTHING:  # every value is returned or a parameter
        return
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


# ---------------------------------------------------------------------------- random symbolic graphs


@st.composite
def symbolic_graphs(draw: st.DrawFn) -> tuple[tvm.IRModule, int, bool]:
    """A random chain-with-branches on float32 [n, w] tensors, n bounded by a drawn bound:
    matmuls, ReLUs, adds, reshapes (views), split/concat (tuples), attention-like [n, n]
    scores and reductions to a static [w]; with `unbounded`, an input [m, 8] (m without a
    bound) reduced into a second result. Returns the module, the bound and `unbounded`."""
    from tvm import tirx

    bound, unbounded = draw(st.integers(1, 96)), draw(st.booleans())
    n, m = tirx.Var("n", "int64"), tirx.Var("m", "int64")
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([n, 8], "float32"))
    y = relax.Var("y", relax.TensorType([m, 8], "float32"))
    params = [x, y] if unbounded else [x]
    with bb.function("main", attrs={"tir_var_upper_bound": {"n": bound}}):
        with bb.dataflow():
            values = [x]
            for step in range(draw(st.integers(2, 9))):
                kind = draw(st.sampled_from(["matmul", "relu", "add", "reshape", "split",
                                             "scores", "reduce"]))  # fmt: skip
                src = values[draw(st.integers(0, len(values) - 1))]
                width = int(src.ty.shape.values[1])
                if kind == "matmul":
                    w = relax.Var(f"w{step}", relax.TensorType([width, draw(st.sampled_from(WIDTHS))],
                                                               "float32"))  # fmt: skip
                    params.append(w)
                    value = bb.emit(relax.op.matmul(src, w))
                elif kind == "relu":
                    value = bb.emit(relax.op.nn.relu(src))
                elif kind == "add":
                    same = [v for v in values if int(v.ty.shape.values[1]) == width]
                    value = bb.emit(relax.op.add(src, same[draw(st.integers(0, len(same) - 1))]))
                elif kind == "reshape":
                    flat = bb.emit(relax.op.reshape(src, [n * width]))
                    value = bb.emit(relax.op.reshape(relax.op.nn.relu(flat), [n, width]))
                elif kind == "split":
                    halves = bb.emit(relax.op.split(src, 2, axis=1))
                    value = bb.emit(relax.op.concat([halves[1], halves[0]], axis=1))
                elif kind == "scores":
                    scores = bb.emit(relax.op.matmul(src, relax.op.permute_dims(src)))
                    value = bb.emit(relax.op.matmul(relax.op.nn.softmax(scores), src))
                else:
                    value = bb.emit(relax.op.add(src, relax.op.sum(src, axis=[0])))
                values.append(value)
            out = bb.emit(relax.op.nn.relu(values[-1]))
            if unbounded:
                out = relax.Tuple([out, bb.emit(relax.op.sum(relax.op.exp(y), axis=[0]))])
            out = bb.emit_output(out)
        bb.emit_func_output(out, params)
    return bb.get(), bound, unbounded


def _arena_offsets(func: relax.Function) -> list[int]:
    """The offsets of the tensors carved from the function's first storage (the arena)."""
    first = func.body.blocks[0].bindings[0].var
    return [int(c.args[1].value) for c in _carve_calls(func.body) if c.args[0].same_as(first)]


def _outputs(executable: Any, args: list[np.ndarray]) -> list[bytes]:
    out = relax.VirtualMachine(executable, tvm.cpu())["main"](
        *[tvm.runtime.tensor(a) for a in args]
    )
    outs = [out] if hasattr(out, "numpy") else list(out)
    return [o.numpy().tobytes() for o in outs]


@settings(max_examples=8, deadline=None)
@given(symbolic_graphs(), st.data())
def test_random_symbolic_graphs_run_the_same_up_to_their_bound(
    case: tuple[tvm.IRModule, int, bool], data: st.DataObject
) -> None:
    from optplan.integrations import tvm_ir

    mod, bound, unbounded = case
    low = tvm_models.lowered(mod, TARGET)
    theirs = relax.transform.StaticPlanBlockMemory()(low)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", otvm.PlanWarning)  # m's tensors, when drawn
        planned, reports = otvm.plan_module(low, otvm.Options(time_limit=5))
    (report,) = reports
    # Kept whole only where nothing is planned, or TVM's few bytes beat 64-byte alignment.
    assert report.kept in (None, otvm.NOTHING) or report.kept.startswith("TVM's"), report.kept
    # The offsets written into TVM's IR, read back, judged on TVM's own tensors at the bound
    # (the k-th tensor optplan reads is TVM's k-th carve; those on constant storages moved).
    constant = tvm_ir.storages(theirs["main"].body)
    carves = tvm_ir.carves(theirs["main"].body)
    moved = [k for k, c in enumerate(carves) if constant[c.value.args[0]] is not None]
    text = theirs["main"].script(show_meta=False)
    problem, _ = extract_plan(Program(parse(text, dims={"m": 1} if unbounded else {}).functions))
    if report.kept is None:
        buffers = tuple(dataclasses.replace(problem.buffers[k], alignment=64) for k in moved)
        written = _arena_offsets(planned["main"])
        plan = Plan(dict(zip((b.id for b in buffers), written)), report.arena_bytes,
                    Status.FEASIBLE, "written", 0)  # fmt: skip
        assert len(written) == len(buffers)
        assert validate(Problem(buffers), plan) == []
        assert report.arena_bytes <= report.tvm_bytes
    executables = [
        tvm.compile(tvm_models.finalized(m, TARGET, planned=p), TARGET, relax_pipeline=None)
        for m, p in ((low, False), (planned, True))
    ]
    for length in {1, data.draw(st.integers(1, bound)), bound}:
        rng = np.random.default_rng(length)
        args = [rng.standard_normal((length, 8)).astype("float32")]
        if unbounded:
            args.append(rng.standard_normal((data.draw(st.integers(1, 40)), 8)).astype("float32"))
        for param in mod["main"].params[len(args) :]:
            shape = [int(d) for d in param.ty.shape.values]
            args.append((rng.standard_normal(shape) * 0.1).astype("float32"))
        assert _outputs(executables[0], args) == _outputs(executables[1], args), length
