"""The reorder pass on programs: valid reordered programs, the peak it claims, and replays
of the reordered program bit for bit against the original's unplanned run."""

from __future__ import annotations

import dataclasses

from hypothesis import example, given, settings
from hypothesis import strategies as st

from optplan.analysis.liveness import build_memory
from optplan.analysis.types import infer_types, verify
from optplan.frontends.script import parse
from optplan.ir import Binding, Block, Call, Function, If, Param, Program, SeqExpr, TensorType, Var
from optplan.passes import use_inplace_calls
from optplan.passes.reorder import block_graphs, reorder
from optplan.planners import PLANNERS
from optplan.problem import lower_bound
from optplan.problem.plan import validate
from optplan.runtime.replay import compare, make_inputs, planned_run, reference_run
from optplan.schedule import SCHEDULERS, Scheduler
from optplan.schedule.graph import is_valid_order
from optplan.strategies.passes import straight_programs
from optplan.strategies.programs import programs

FAST = [Scheduler(name, time_limit=1.0) for name in SCHEDULERS]


def check_reordered(
    program: Program, scheduler: Scheduler, reference_program: Program | None = None
) -> None:
    """Reorder `program`, check the claims, and replay the reordered program planned
    against the unplanned run of `reference_program` (default: `program` itself)."""
    original = infer_types(program)
    result = reorder(original, scheduler)
    verify(result.program)
    memory = build_memory(result.program, alignment=1)
    assert lower_bound(memory.problem) == result.peak_bytes
    assert result.bound_bytes <= result.peak_bytes
    if scheduler.name not in ("lpmf", "bfs", "dfs"):
        assert result.peak_bytes <= result.original_peak_bytes
    _same_plain_blocks(original.main.body, result.program.main.body)
    plan = PLANNERS["greedy"](memory.problem)
    assert validate(memory.problem, plan) == []
    inputs = make_inputs(original)
    reference = reference_run(infer_types(reference_program or program), inputs)
    planned = planned_run(result.program, memory, plan, inputs)
    if reference.failure is not None:
        assert planned.failure is not None
        return
    assert compare(reference, planned) is None


def _same_plain_blocks(before: SeqExpr, after: SeqExpr) -> None:
    """Plain blocks keep their order; effects (bindings to `_`) keep their place."""
    for old, new in zip(before.blocks, after.blocks, strict=True):
        if not old.dataflow:
            assert [b.var.name for b in old.bindings] == [b.var.name for b in new.bindings]
        else:
            assert sorted(b.var.name for b in old.bindings) == sorted(
                b.var.name for b in new.bindings
            )
            for index, binding in enumerate(old.bindings):
                if binding.var.name == "_":
                    assert new.bindings[index] == binding


def _if_alias() -> Program:
    """v1's If hands over v0, which is returned; relu writes over v1 in place."""
    scalar = TensorType((), "float32")

    def relu(name: str, arg: str) -> Binding:
        return Binding(Var(name), Call("nn.relu", (Var(arg),)))

    ifs = Block(
        (
            Binding(Var("v0"), If(Var("cond"), SeqExpr((), Var("x0")), SeqExpr((), Var("x0")))),
            Binding(Var("v1"), If(Var("cond"), SeqExpr((), Var("v0")), SeqExpr((), Var("x0")))),
        )
    )
    tail = Block(
        (relu("v3", "x0"), relu("v4", "x0"), relu("v5", "v1")), dataflow=True, outputs=(Var("v5"),)
    )
    params = (Param(Var("x0"), scalar), Param(Var("cond"), TensorType((), "bool")))
    return Program((Function("main", params, None, SeqExpr((ifs, tail), Var("v0"))),))


@settings(max_examples=40, deadline=None)
@given(programs(), st.sampled_from(FAST), st.booleans())
@example(_if_alias(), Scheduler("auto", time_limit=1.0), True)
def test_random_programs_reorder_validly_and_replay(
    program: Program, scheduler: Scheduler, inplace: bool
) -> None:
    # The reference is the program before the in-place rewrite, so one replay judges the
    # rewrite and the new order together.
    check_reordered(use_inplace_calls(program) if inplace else program, scheduler, program)


@settings(max_examples=60, deadline=None)
@given(straight_programs(), st.sampled_from(FAST), st.booleans())
def test_straight_programs_reorder_validly_and_replay(
    program: Program, scheduler: Scheduler, inplace: bool
) -> None:
    check_reordered(use_inplace_calls(program) if inplace else program, scheduler, program)


TY = TensorType((64,), "float32")


def _bind(name: str, op: str, *args: str, ty: TensorType = TY, **attrs: object) -> Binding:
    call = Call(op, tuple(Var(a) for a in args), tuple(sorted(attrs.items())))  # type: ignore[arg-type]
    return Binding(Var(name), call, ty)


def _program(*bindings: Binding, result: str) -> Program:
    block = Block(bindings, dataflow=True, outputs=(Var(result),))
    return Program((Function("main", (Param(Var("x"), TY),), TY, SeqExpr((block,), Var(result))),))


def test_an_earlier_reader_stays_before_the_call_that_overwrites_its_operand() -> None:
    # c reads a before the in-place add writes over a; running the add first would be
    # cheaper (a dies sooner) and wrong.
    program = _program(
        _bind("a", "exp", "x"),
        _bind("c", "nn.relu", "a"),
        _bind("b", "add", "a", "x", inplace_indices=(0,)),
        _bind("d", "add", "b", "c"),
        result="d",
    )
    (graph,) = block_graphs(program)
    assert 1 in graph.preds[2]
    for scheduler in FAST:
        assert is_valid_order(graph, scheduler(graph).order)
        check_reordered(program, scheduler)


def test_a_big_branch_run_first_lowers_the_peak_and_replays() -> None:
    # Written order holds the small result s while the big branch runs; the best order
    # runs the big branch (and frees it) first.
    program = parse(
        """
@R.function
def main(x: R.Tensor((64,), "float32")) -> R.Tensor((64,), "float32"):
    with R.dataflow():
        s = R.exp(x)
        g = R.call_tir(widen, (x,), out_sinfo=R.Tensor((1024,), "float32"))
        h = R.sum(g, axis=None, keepdims=False)
        d = R.add(s, h)
        R.output(d)
    return d
"""
    )
    for scheduler in FAST:
        check_reordered(program, scheduler)
    result = reorder(program, Scheduler("exact"))
    assert result.peak_bytes < result.original_peak_bytes
    assert result.optimal


BRANCHES_WITH_EFFECTS = """
@R.function
def main(x: R.Tensor((64,), "float32")) -> R.Tensor((64,), "float32"):
    with R.dataflow():
        s = R.exp(x)
        _ = R.call_tir(log_value, (s,), out_sinfo=R.Tensor((1,), "float32"))
        g = R.call_tir(widen, (x,), out_sinfo=R.Tensor((1024,), "float32"))
        _ = R.call_tir(log_value, (g,), out_sinfo=R.Tensor((1,), "float32"))
        h = R.sum(g, axis=None, keepdims=False)
        d = R.add(s, h)
        R.output(d)
    return d
"""


def test_a_binding_kept_for_its_effect_stays_in_place() -> None:
    program = parse(
        """
@R.function
def main(x: R.Tensor((64,), "float32")) -> R.Tensor((64,), "float32"):
    with R.dataflow():
        s = R.exp(x)
        g = R.call_tir(widen, (x,), out_sinfo=R.Tensor((1024,), "float32"))
        _ = R.call_tir(log_value, (s,), out_sinfo=R.Tensor((1,), "float32"))
        h = R.sum(g, axis=None, keepdims=False)
        d = R.add(s, h)
        R.output(d)
    return d
"""
    )
    (graph,) = block_graphs(program)
    assert graph.preds[2] == (0, 1)
    assert all(2 in graph.preds[v] for v in (3, 4))
    for scheduler in FAST:
        result = reorder(program, scheduler)
        assert result.program.main.body.blocks[0].bindings[2].var.name == "_"
    # Two bindings to `_` share a name: that block is left as written.
    twice = parse(BRANCHES_WITH_EFFECTS)
    assert reorder(twice, Scheduler("exact")).program == infer_types(twice)


def test_a_dataflow_block_inside_a_branch_is_ordered_inside_it() -> None:
    # The text format has no dataflow blocks in branches; a program built in Python may.
    plain = parse(
        """
@R.function
def main(x: R.Tensor((64,), "float32"), c: R.Tensor((), "bool")) -> R.Tensor((64,), "float32"):
    if c:
        s = R.exp(x)
        g = R.call_tir(widen, (x,), out_sinfo=R.Tensor((1024,), "float32"))
        h = R.sum(g, axis=None, keepdims=False)
        d = R.add(s, h)
        r = d
    else:
        r = R.nn.relu(x)
    y = R.multiply(r, r)
    return y
"""
    )
    fn = plain.main
    if_binding = fn.body.blocks[0].bindings[0]
    node = if_binding.value
    assert isinstance(node, If)
    block = node.then_branch.blocks[0]
    split = (
        Block(block.bindings[:4], dataflow=True, outputs=(Var("d"),)),
        Block(block.bindings[4:]),
    )
    branch = dataclasses.replace(node.then_branch, blocks=split)
    if_binding = dataclasses.replace(
        if_binding, value=dataclasses.replace(node, then_branch=branch)
    )
    blocks = (
        dataclasses.replace(
            fn.body.blocks[0], bindings=(if_binding, *fn.body.blocks[0].bindings[1:])
        ),
    )
    program = plain.replace_function(
        dataclasses.replace(fn, body=dataclasses.replace(fn.body, blocks=blocks))
    )
    result = reorder(program, Scheduler("exact"))
    reordered = result.program.main.body.blocks[0].bindings[0].value
    assert isinstance(reordered, If)
    assert [b.var.name for b in reordered.then_branch.blocks[0].bindings] == ["g", "h", "s", "d"]
    assert result.peak_bytes < result.original_peak_bytes and result.optimal
    for scheduler in FAST:
        check_reordered(program, scheduler)


def test_a_reader_stays_before_an_in_place_write_over_a_returned_buffer() -> None:
    """v3 = exp(v0) runs in place over v0 and is returned, so v0 is not planned; v2 still
    reads v0 and must run before v3 (found by the property above, under load)."""
    program = _program(
        _bind("v0", "exp", "x"),
        _bind("v2", "exp", "v0"),
        _bind("v3", "exp", "v0", inplace_indices=(0,)),
        _bind("v4", "exp", "x"),
        result="v3",
    )
    (graph,) = block_graphs(program)
    assert 1 in graph.preds[2]
    for scheduler in FAST:
        assert is_valid_order(graph, scheduler(graph).order)
        check_reordered(program, scheduler)
