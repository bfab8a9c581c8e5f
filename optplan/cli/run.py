"""`optplan run`: replay the planned program in one arena, bit for bit against the
reference run (at another size with `--dim`, against expected outputs with `--expect`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

from optplan.cli.budget import over_capacity, with_capacity
from optplan.cli.files import read_npz
from optplan.cli.inputs import load_input, reorder_target
from optplan.cli.options import Commands, add_input, budget_of, parse_dims
from optplan.cli.records import counted
from optplan.cli.solving import solve
from optplan.errors import InputError
from optplan.frontends import Loaded, read_plan
from optplan.problem.plan import Plan, validate


def _cmd_run(args: argparse.Namespace) -> int:
    from optplan.runtime import replay as executor

    loaded = load_input(args)
    if loaded.program is None or loaded.memory is None:
        kind = "a CSV problem" if loaded.graph is None else "a computation graph"
        raise InputError(
            f"{kind} has no program to replay; give a .py, .onnx or .tflite", file=args.program
        )
    # The reordered program replays against the original program's reference run.
    target = with_capacity(args, reorder_target(args, loaded))
    copies: dict[str, str] = {}
    if over_capacity(args, target):
        target, copies, line = _recomputed(args, target)
        if line:
            print(line)
            return 1
    if args.plan:
        plan = read_plan(args.plan, target.problem)
    else:
        plan = solve(target.problem, args.planner, budget_of(args), quiet=True)
    faults = validate(target.problem, plan)
    for fault in faults:
        print(f"invalid plan: {fault}", file=sys.stderr)
    replay = _replay_program(loaded, args)
    if replay is not loaded:
        faults = _at_replayed_size(args, loaded, replay, plan)
        loaded = target = replay
    assert loaded.program is not None and loaded.memory is not None
    inputs = _inputs(args, loaded)
    reference = _reference_run(args, loaded, inputs)
    if args.expect:
        mismatch = _expected_outputs(reference.outputs, args)
        if mismatch:
            print(f"{args.program}: {mismatch}")
            return 1
    assert target.program is not None and target.memory is not None
    planned = executor.planned_run(target.program, target.memory, plan, inputs)
    difference = executor.compare(reference, planned) or _copies_differ(reference, planned, copies)
    if difference is not None:
        print(f"{args.program}: replay differs: {difference}")
        return 1
    print(_replayed(args, target, plan, copies))
    if args.program.lower().endswith(".tflite") and not faults:
        return _in_tflm(args, loaded, plan)
    return 1 if faults else 0


def _reference_run(args: argparse.Namespace, loaded: Loaded, inputs: dict[str, np.ndarray]) -> Any:
    """The unplanned run, a kernel's fault located in the program, an input's in its file."""
    from optplan.runtime import replay as executor

    assert loaded.program is not None
    try:
        return executor.reference_run(loaded.program, inputs)
    except executor.KernelFailure as error:
        raise error.located(args.program) from None
    except InputError as error:
        # The program is already checked, so what is wrong here is a given input value.
        raise error.located(args.inputs or args.program) from None


def _replayed(args: argparse.Namespace, target: Loaded, plan: Plan, copies: dict[str, str]) -> str:
    """The line that says the replay was equal, and where it ran."""
    assert target.memory is not None
    tensors = len(target.memory.placements)
    order = f", reordered by {args.reorder}" if args.reorder else ""
    order += f", {counted(len(copies), 'value')} computed again" if copies else ""
    where = f"an arena of {plan.arena} bytes"
    if plan.residences:
        sizes = {b.id: b.size for b in target.problem.buffers}
        used = {m.name: 0 for m in target.problem.memories}
        for r in plan.residences:
            used[r.memory] = max(used[r.memory], r.offset + sizes[r.buffer])
        memories = ", ".join(f"{name} ({size} bytes)" for name, size in used.items())
        where = f"memories {memories}, with {counted(len(plan.copies), 'copy', 'copies')}"
    return (
        f"{args.program}: replay bit-for-bit equal to the reference run "
        f"({counted(tensors, 'planned value')} in {where}, plan by {plan.planner}{order})"
    )


def _in_tflm(args: argparse.Namespace, loaded: Loaded, plan: Plan) -> int:
    """The model run in TFLite Micro with its own plan and with this one as its offline
    plan: the smallest arena of each, and their outputs compared (exit 1 if they differ)."""
    from optplan.integrations import tflm, tflm_run

    if not tflm_run.available():
        print(
            f"{args.program}: tflite-micro is not installed (pip install tflite-micro); "
            "the run in TFLite Micro is left out"
        )
        return 0
    if args.reorder or args.plan:
        raise InputError(
            "--reorder and --plan replay in NumPy only; leave them out to run the model "
            "in TFLite Micro",
            file=args.program,
        )
    try:
        planned = tflm.planned_model(loaded, plan)
    except tflm.InvalidPlan as error:
        raise InputError(str(error)) from None
    own = Path(args.program).read_bytes()
    found = tflm_run.compare_in_tflm(own, planned, plan.lower_bound, args.seed)
    print(f"{args.program}: {tflm_run.describe(found, plan.arena)}")
    return 0 if found.outputs_equal else 1


def _recomputed(args: argparse.Namespace, target: Loaded) -> tuple[Loaded, dict[str, str], str]:
    """The program rewritten to fit `--capacity`, the values it computes again, and the
    one line saying why there is none (empty when there is)."""
    from optplan.cli.budget import (
        does_not_fit,
        recompute_note,
        recomputed,
        recomputed_loaded,
        what_fits,
    )

    dims = parse_dims(args.dim)
    if args.plan or any(target.bounds.get(name) != value for name, value in dims.items()):
        raise InputError(
            "--capacity that needs recomputation replays its own plan, at the planned sizes",
            file=args.program,
        )
    result = recomputed(args, target)
    if not result.status.has_plan:
        hint = what_fits(args, target, args.capacity)
        return target, {}, f"{args.program}: {recompute_note(result, args.capacity)}; {hint}"
    print(f"{args.program}: {recompute_note(result, args.capacity)}", file=sys.stderr)
    rewritten = recomputed_loaded(args, target, result)
    line = does_not_fit(args, rewritten)
    return rewritten, dict(result.copies), line or ""


def _copies_differ(reference: object, planned: object, copies: dict[str, str]) -> str | None:
    """A value computed again must equal, bit for bit, the original's reference value."""
    expected = getattr(reference, "values", {})
    found = getattr(planned, "values", {})
    for new, old in copies.items():
        if new in found and old in expected:
            a, b = np.asarray(expected[old]), np.asarray(found[new])
            if a.shape != b.shape or a.tobytes() != b.tobytes():
                return f"{new!r}, computed again, differs from {old!r} of the reference run"
    return None


def _at_replayed_size(args: argparse.Namespace, loaded: Loaded, replay: Loaded, plan: Plan) -> list:  # type: ignore[type-arg]
    """Say at which sizes the plan replays, and judge it there too."""
    assert replay.program is not None and replay.memory is not None
    if getattr(args, "reorder", None):
        raise InputError(
            "--reorder with --dim replays is not supported: the order is chosen at the "
            "bounds; replay at the bounds, or leave out --reorder",
            file=args.program,
        )
    print(
        f"{args.program}: planned at {_values(loaded.bounds)}, replayed at {_values(replay.bounds)}"
    )
    faults = validate(replay.problem, plan)
    for fault in faults:
        print(f"invalid plan at the replayed size: {fault}", file=sys.stderr)
    return faults


def _inputs(args: argparse.Namespace, loaded: Loaded) -> dict[str, np.ndarray]:
    """Random inputs by `--seed`, the weights, and the values `--inputs` gives."""
    from optplan.runtime.replay import make_inputs

    assert loaded.program is not None
    inputs = {**make_inputs(loaded.program, seed=args.seed), **loaded.weights}
    if args.inputs:
        given = read_npz(args.inputs)
        unknown = sorted(set(given) - set(inputs) - _expected_names(args, given))
        if unknown:
            raise InputError(
                f"{', '.join(map(repr, unknown))} is no parameter of the program "
                f"(its parameters: {', '.join(inputs) or 'none'})",
                file=args.inputs,
            )
        inputs.update(given)
    return inputs


def add(commands: Commands) -> None:
    run = commands.add_parser("run", help="replay the planned program in one arena, bit for bit")
    add_input(run, json=False)
    run.add_argument("--planner", default="cpsat", help="planner to use (default: cpsat)")
    run.add_argument("--plan", help="replay this plan (JSON with 'offsets') instead of planning")
    run.add_argument("--inputs", help=".npz of input values by parameter name (others are random)")
    run.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default: 0)")
    run.add_argument(
        "--expect",
        help=".npz whose 'output' (or 'output_0', 'output_1', ...) the reference run must match",
    )
    run.add_argument("--rtol", type=float, default=1e-4, help="relative tolerance of --expect")
    run.add_argument("--atol", type=float, default=1e-5, help="absolute tolerance of --expect")
    run.set_defaults(handler=_cmd_run)


def _replay_program(loaded: Loaded, args: argparse.Namespace) -> Loaded:
    """The program at the sizes `--dim` asks for, when they differ from the planned ones."""
    from optplan.frontends import load_replay

    dims = parse_dims(args.dim)
    if not dims or all(loaded.bounds.get(n) == v for n, v in dims.items()):
        return loaded
    return load_replay(
        loaded, dims, alignment=args.alignment, plan_outputs=args.plan_outputs, inplace=args.inplace
    )


def _values(values: dict[str, int]) -> str:
    return ", ".join(f"{name}={value}" for name, value in sorted(values.items()))


def _expected_names(args: argparse.Namespace, given: dict[str, np.ndarray]) -> set[str]:
    """The outputs in an --inputs file that is also the --expect file (one .npz with both)."""
    if not args.expect or Path(args.expect).resolve() != Path(args.inputs).resolve():
        return set()
    return {name for name in given if name == "output" or name.startswith("output_")}


def _expected_outputs(outputs: tuple[object, ...], args: argparse.Namespace) -> str | None:
    """Why the reference outputs differ from the expected ones, or None if they agree."""
    expected = read_npz(args.expect)
    names = ["output"] if "output" in expected else [f"output_{i}" for i in range(len(outputs))]
    if len(names) != len(outputs) or any(n not in expected for n in names):
        raise InputError(
            f"expected {len(outputs)} output(s) named {', '.join(names)}", file=args.expect
        )
    worst = 0.0
    for name, got in zip(names, outputs):
        want = np.asarray(expected[name])
        got = np.asarray(got)
        if want.shape != got.shape:
            return f"{name} has shape {list(got.shape)}, {args.expect} has {list(want.shape)}"
        close = np.isclose(got, want, rtol=args.rtol, atol=args.atol, equal_nan=True)
        if not close.all():
            index = np.unravel_index(int(np.argmin(close)), close.shape)
            return (
                f"{name} differs from {args.expect} at {list(map(int, index))}: "
                f"{got[index]!r} against {want[index]!r} (rtol {args.rtol:g}, atol {args.atol:g})"
            )
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
        worst = max(worst, float(diff.max(initial=0.0)))
    print(
        f"{args.program}: outputs match {args.expect} within rtol {args.rtol:g}, "
        f"atol {args.atol:g} (largest difference {worst:.3g})"
    )
    return None
