"""`optplan fit`: the cheapest lever that fits, a plan that replays bit for bit, or a
proof whose bound holds.

Every model is tried at three capacities: the arena of its plan as written (fits as is),
one that needs a lever, and one below every lever's bound. The cheapest answer is
checked against each lever tried alone, by the passes and planners that hold it, not
by `fit`'s own table.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import fit_models
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optplan import fit
from optplan.analysis.liveness import build_memory
from optplan.analysis.types import typed_program
from optplan.cli import main
from optplan.fitting import CANNOT, FITS, Fitted
from optplan.fitting.core import onnx_allow
from optplan.fitting.levers import COMPUTE, FREE, TRAFFIC
from optplan.frontends import load
from optplan.ir import Program
from optplan.passes import use_inplace_calls
from optplan.passes.recompute import recompute
from optplan.passes.reorder import reorder
from optplan.planners import get_planner
from optplan.problem import Memory, Problem, lower_bound, one_arena
from optplan.problem.plan import validate
from optplan.runtime import replay
from optplan.schedule import Scheduler
from optplan.strategies.passes import straight_programs
from optplan.strategies.relax import RelaxCase, relax_cases

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
TFLITE = ROOT / "tests" / "data" / "tflite" / "ds_cnn.tflite"
SLOW = (Memory("slow"),)

# (model, the capacity that needs a lever as a fraction of the live bytes as written,
# the memories given); the writers build the models the repository does not hold.
CASES = {
    "residual_cnn.py": (0.75, SLOW),  # no order, in place or recomputation goes below
    "transformer_block.py": (0.8, None),
    "cnn_train.py": (0.8, None),
    "kws_cnn.py": (0.75, None),
    "tiny_encoder.onnx": (0.75, None),
    "kv_decoder.onnx": (0.75, None),
    "unet.onnx": (0.9, None),
    "ds_cnn.tflite": (0.9, SLOW),  # every op's own inputs and outputs set its peak
}
WRITERS = {
    "kws_cnn.py": fit_models.write_cnn,
    "tiny_encoder.onnx": fit_models.write_encoder,
    "kv_decoder.onnx": fit_models.write_decoder,
    "unet.onnx": fit_models.write_unet,
}


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    directory = tmp_path_factory.mktemp("fit_models")
    paths = {name: str(EXAMPLES / name) for name in CASES if (EXAMPLES / name).is_file()}
    paths.update({name: write(directory) for name, write in WRITERS.items()})
    paths["ds_cnn.tflite"] = str(TFLITE)
    return paths


def _fits_alone(program: Program, capacity: int, alignment: int, outputs: bool) -> bool:
    """Whether `program` packs within `capacity`, by greedy or CP-SAT, judged by validate."""
    problem = build_memory(program, plan_outputs=outputs, alignment=alignment).problem
    problem = Problem(problem.buffers, problem.aliases, memories=one_arena(capacity))
    if lower_bound(problem) > capacity:
        return False
    for planner in (get_planner("greedy"), get_planner("cpsat", time_limit=2.0)):
        plan = planner(problem)
        if plan.status.has_plan and not validate(problem, plan):
            return True
    return False


def _free_levers(program: Program, capacity: int, alignment: int, outputs: bool) -> list[str]:
    """The free levers that fit, each tried alone, cheapest first."""
    reordered = reorder(program, Scheduler("auto", time_limit=1.0), plan_outputs=outputs).program
    forms = {
        "as is": program,
        "in place": use_inplace_calls(program),
        "order": reordered,
        "order + in place": use_inplace_calls(reordered),
    }
    return [
        lever for lever, form in forms.items() if _fits_alone(form, capacity, alignment, outputs)
    ]


def _replays(found: Fitted, path: str) -> None:
    """The answer's plan, replayed in one arena (or one array per memory), gives the
    reference run of the program as written, bit for bit."""
    best = found.best
    assert best is not None and best.form is not None and best.plan is not None
    loaded = load(path)
    assert loaded.program is not None and best.form.program is not None
    assert best.memory is not None
    inputs = {**replay.make_inputs(loaded.program, seed=0), **loaded.weights}
    reference = replay.reference_run(loaded.program, inputs)
    planned = replay.planned_run(best.form.program, best.memory, best.plan, inputs)
    assert replay.compare(reference, planned) is None


def _check_cheapest(found: Fitted, path: str, outputs: bool) -> None:
    loaded = load(path)
    assert loaded.program is not None
    capacity, alignment = found.capacity, 16 if path.endswith(".tflite") else 64
    free = _free_levers(loaded.program, capacity, alignment, outputs)
    if free:
        assert found.best is not None and found.best.cost_class == FREE
        assert found.best.lever == free[0], (found.best.lever, free)
        return
    assert found.best is None or found.best.cost_class != FREE
    fitting = [t for t in found.tried if t.fits]
    assert found.best is not None and fitting
    assert found.best.cost == min(t.cost for t in fitting if t.cost_class == found.best.cost_class)
    if found.best.cost_class == TRAFFIC:
        # No recomputation fits: each tried alone finds no program within the capacity.
        for program in (loaded.program, use_inplace_calls(loaded.program)):
            alone = recompute(
                program, capacity, time_limit=2.0, plan_outputs=outputs, alignment=alignment
            )
            assert not alone.status.has_plan or not _fits_alone(
                alone.program, capacity, alignment, outputs
            )
    assert found.best.cost_class in (COMPUTE, TRAFFIC)


def _check_proof(found: Fitted, path: str, outputs: bool) -> None:
    """The capacity is below the bound, and the bound holds: no lever tried alone goes
    below it."""
    proof = found.proof
    assert found.status == CANNOT and proof is not None
    assert found.capacity < proof.bound_bytes and proof.held
    loaded = load(path)
    assert loaded.program is not None
    program, alignment = loaded.program, 16 if path.endswith(".tflite") else 64
    reordered = reorder(program, Scheduler("auto", time_limit=1.0), plan_outputs=outputs)
    assert reordered.peak_bytes >= proof.bound_bytes
    forms = (program, use_inplace_calls(program), reordered.program)
    for form in (*forms, use_inplace_calls(reordered.program)):
        problem = build_memory(form, plan_outputs=outputs, alignment=alignment).problem
        assert _valid_arena(problem) >= proof.bound_bytes
    for form in forms[:2]:
        # As fit recomputes: an ONNX node's inner bindings stay computed once.
        alone = recompute(
            form,
            proof.bound_bytes - 1,
            time_limit=1.0,
            plan_outputs=outputs,
            alignment=alignment,
            allow=onnx_allow(path),
        )
        assert not alone.status.has_plan
    assert not any(t.fits for t in found.tried)


def _valid_arena(problem: Problem) -> int:
    """The arena of a valid plan of `problem` without its capacity: never below a bound
    that holds."""
    problem = Problem(problem.buffers, problem.aliases)
    plan = get_planner("greedy")(problem)
    assert validate(problem, plan) == []
    return plan.arena


@pytest.mark.parametrize("name", sorted(CASES))
def test_fit_at_three_capacities_is_the_cheapest_lever_or_a_proof(
    name: str, models: dict[str, str]
) -> None:
    path = models[name]
    loaded = load(path)
    outputs = path.endswith(".tflite")
    as_written = get_planner("greedy")(loaded.problem).arena
    fraction, memories = CASES[name]
    fits = fit(path, as_written, time_limit=4.0, every=True)
    assert fits.status == FITS and fits.best is not None and fits.best.lever == "as is"
    _replays(fits, path)
    lever = fit(
        path,
        int(lower_bound(loaded.problem) * fraction),
        memories=memories,
        time_limit=4.0,
        every=True,
    )
    assert lever.status == FITS and lever.best is not None and lever.best.lever != "as is"
    _check_cheapest(lever, path, outputs)
    _replays(lever, path)
    below = fit(path, max(1, lever.bound_bytes // 2), time_limit=4.0, every=True)
    _check_proof(below, path, outputs)


def test_the_written_program_and_plan_replay_in_run(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = str(EXAMPLES / "transformer_block.py")
    program, plan = str(tmp_path / "fitted.py"), str(tmp_path / "fitted.json")
    capacity = str(int(lower_bound(load(path).problem) * 0.8))
    assert main(["fit", path, "--capacity", capacity, "-o", program, "-o", plan]) == 0
    out = capsys.readouterr().out
    assert "fits with in place" in out and "KiB" in out
    assert main(["run", program, "--plan", plan]) == 0
    assert "bit-for-bit equal" in capsys.readouterr().out


def test_cannot_prints_the_proof_and_levers_the_table(capsys) -> None:  # type: ignore[no-untyped-def]
    path = str(EXAMPLES / "residual_cnn.py")
    assert main(["fit", path, "--capacity", "40KiB", "--levers"]) == 1
    out = capsys.readouterr().out
    assert "cannot fit" in out and "needs at least" in out and "live at point" in out
    assert "recompute + in place" in out.splitlines()[-1] or "recompute" in out


MEMORIES = st.sampled_from([None, SLOW, (Memory("fast", None), Memory("slow", 48))])


@settings(max_examples=25, deadline=None)
@given(straight_programs(), st.integers(16, 160), MEMORIES)
def test_what_fit_says_fits_does_and_what_cannot_is_below_a_bound_that_holds(
    program: Program, capacity: int, memories: tuple[Memory, ...] | None
) -> None:
    found = fit(program, capacity, alignment=1, memories=memories, time_limit=1.0, every=True)
    typed = typed_program(program)
    if found.status == FITS:
        best = found.best
        assert best is not None and best.problem is not None and best.plan is not None
        assert validate(best.problem, best.plan) == []
        assert best.arena_bytes is not None and best.arena_bytes <= capacity
        assert best.form is not None and best.form.program is not None
        assert best.memory is not None
        inputs = replay.make_inputs(typed, seed=0)
        planned = replay.planned_run(best.form.program, best.memory, best.plan, inputs)
        assert replay.compare(replay.reference_run(typed, inputs), planned) is None
        return
    if found.status != CANNOT:
        return
    proof = found.proof
    assert proof is not None and capacity < proof.bound_bytes
    # The bounded pair: a fast memory of the capacity, and 48 bytes of slow memory.
    assert memories != SLOW
    assert capacity + (48 if memories else 0) < proof.bound_bytes
    order = Scheduler("auto", time_limit=0.5)
    assert reorder(typed, order).peak_bytes >= proof.bound_bytes
    for form in (typed, use_inplace_calls(typed)):
        assert lower_bound(build_memory(form, alignment=1).problem) >= proof.bound_bytes
        alone = recompute(form, proof.bound_bytes - 1, time_limit=0.5, alignment=1)
        assert not alone.status.has_plan


@settings(max_examples=20, deadline=None)
@given(relax_cases(max_bindings=10), st.floats(0.2, 1.1), st.sampled_from([None, SLOW]))
def test_on_relax_programs_fit_is_judged_by_validate_and_the_bound_by_every_lever(
    case: RelaxCase, fraction: float, memories: tuple[Memory, ...] | None
) -> None:
    program = typed_program(case.program)
    peak = lower_bound(build_memory(program, alignment=64).problem)
    capacity = max(1, int(peak * fraction))
    found = fit(program, capacity, memories=memories, time_limit=1.0, every=True)
    for tried in found.tried:
        if tried.fits:
            assert tried.problem is not None and tried.plan is not None
            assert validate(tried.problem, tried.plan) == []
    if found.status == FITS:
        assert found.best is not None and found.best.fits
        assert found.best.cost_class == min(t.cost_class for t in found.tried if t.fits)
    elif found.status == CANNOT:
        assert found.proof is not None and capacity < found.proof.bound_bytes
        assert not any(t.fits for t in found.tried)
        for tried in found.tried:
            if tried.problem is not None:
                assert _valid_arena(tried.problem) >= found.proof.bound_bytes


def _hinted(line: str) -> list[str]:
    """The `optplan fit` command a hint suggests, as arguments of `main`."""
    assert "optplan fit " in line, line
    command = line[line.index("optplan fit ") :].split(" tries longer")[0]
    return shlex.split(command)[1:]


@pytest.mark.parametrize(
    "name", ["cnn_train.py", "transformer_block.py", "kws_cnn.py", "tiny_encoder.onnx", "unet.onnx"]
)
@pytest.mark.parametrize("command", ["plan", "compare", "run"])
def test_every_hint_leads_to_a_fit_command_that_fits(
    name: str, command: str, models: dict[str, str], capsys
) -> None:  # type: ignore[no-untyped-def]
    path = models[name]
    peak = lower_bound(load(path).problem)
    for capacity in (int(peak * CASES[name][0]), max(1, peak // 5)):
        argv = [command, path, "--capacity", str(capacity), "--time-limit", "4"]
        if main(argv) == 0:
            assert command == "run"  # run recomputes within the capacity itself
            assert "bit-for-bit equal" in capsys.readouterr().out
            continue
        captured = capsys.readouterr()
        line = next(x for x in (captured.out + captured.err).splitlines() if "optplan fit " in x)
        assert main([*_hinted(line), "--time-limit", "4"]) == 0, line
        assert "fits" in capsys.readouterr().out


def test_the_issues_hints_point_at_in_place(models: dict[str, str], capsys) -> None:  # type: ignore[no-untyped-def]
    # In place alone takes the CNN and the encoder below the capacity; the hint says so.
    for name in ("kws_cnn.py", "tiny_encoder.onnx"):
        path = models[name]
        capacity = str(int(lower_bound(load(path).problem) * 0.75))
        assert main(["plan", path, "--capacity", capacity]) == 1
        assert "in place fits it (costs nothing" in capsys.readouterr().out


def test_json_gives_the_answer_every_lever_and_every_bound(capsys) -> None:  # type: ignore[no-untyped-def]
    path = str(EXAMPLES / "cnn_train.py")
    assert main(["fit", path, "--capacity", "45KiB", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["status"] == "fits" and record["lever"].startswith("recompute")
    assert (
        record["arena_bytes"] <= 45 * 1024 and record["arena_kib"] == record["arena_bytes"] / 1024
    )
    assert record["extra_compute_percent"] > 0 and record["copies"]
    assert {lever["lever"] for lever in record["levers"]} >= {"as is", "in place", "order"}
    assert record["bounds"] and record["proof"] is None
    assert main(["fit", path, "--capacity", "8KiB", "--json"]) == 1
    record = json.loads(capsys.readouterr().out)
    assert record["status"] == "cannot" and record["proof"]["bound_bytes"] > 8192
    assert record["proof"]["held"]


def test_a_csv_problem_fits_as_is_or_in_a_second_memory(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "p.csv"
    path.write_text("id,lower,upper,size\na,0,2,64\nb,1,3,32\nc,2,4,64\n")
    assert main(["fit", str(path), "--capacity", "96"]) == 0
    assert "fits as is" in capsys.readouterr().out
    assert main(["fit", str(path), "--capacity", "64"]) == 1
    assert "cannot fit" in capsys.readouterr().out
    plan = tmp_path / "plan.json"
    assert main(["fit", str(path), "--capacity", "64", "--memory", "slow", "-o", str(plan)]) == 0
    assert "fits with second memory, slow-memory traffic" in capsys.readouterr().out
    written = json.loads(plan.read_text())
    assert written["offsets"] and {m["name"] for m in written["memories"]} == {"fast", "slow"}


@pytest.mark.parametrize(
    "argv",
    [
        ["--capacity", "0"],
        ["--capacity", "1KiB", "-o", "out.txt"],
        ["--capacity", "64KB"],
    ],
)
def test_bad_input_is_one_line_and_nothing_is_written(argv: list[str], capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["fit", str(EXAMPLES / "cnn_train.py"), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0]
    assert not Path("out.txt").exists()


@pytest.mark.parametrize(("name", "fraction"), [("tiny_encoder.onnx", 0.75), ("unet.onnx", 0.9)])
def test_a_written_onnx_model_gives_onnxruntime_the_same_outputs(
    name: str, fraction: float, models: dict[str, str], tmp_path: Path
) -> None:
    import numpy as np

    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    path, written = models[name], str(tmp_path / "fitted.onnx")
    capacity = str(int(lower_bound(load(path).problem) * fraction))
    assert main(["fit", path, "--capacity", capacity, "--levers", "-o", written]) == 0
    onnx.checker.check_model(onnx.load(written))
    session = ort.InferenceSession(path)
    rng = np.random.default_rng(0)
    feed = {i.name: rng.standard_normal(i.shape).astype(np.float32) for i in session.get_inputs()}
    want = session.run(None, feed)
    got = ort.InferenceSession(written).run(None, feed)
    assert all(np.array_equal(a, b) for a, b in zip(want, got))


def _held_skip(directory: Path) -> str:
    """x -> a (256 B) held across two MatMuls (512 B, 1024 B) to the last Add: only
    computing a again goes below 1792 bytes (a MatMul is not in place, the chain has one
    order)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def value(name: str, width: int) -> onnx.ValueInfoProto:
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, width])

    nodes = [
        helper.make_node("Relu", ["x"], ["a"]),
        helper.make_node("MatMul", ["a", "w1"], ["b"]),
        helper.make_node("MatMul", ["b", "w2"], ["c"]),
        helper.make_node("ReduceMean", ["c"], ["e"], axes=[1], keepdims=1),
        helper.make_node("Add", ["e", "a"], ["y"]),
    ]
    rng = np.random.default_rng(0)
    weights = [
        numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
        for name, shape in (("w1", (64, 128)), ("w2", (128, 256)))
    ]
    graph = helper.make_graph(nodes, "held", [value("x", 64)], [value("y", 64)], weights)
    path = str(directory / "held.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def test_a_recomputing_onnx_model_is_written_with_its_nodes_again(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    import numpy as np

    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    path, written = _held_skip(tmp_path), str(tmp_path / "fitted.onnx")
    # With the output planned, Add's in-place output keeps a in the arena to the end.
    argv = ["fit", path, "--alignment", "1", "--plan-outputs", "--capacity", "1600", "-o", written]
    assert main(argv) == 0
    assert "fits with recompute" in capsys.readouterr().out
    assert [n.op_type for n in onnx.load(written).graph.node].count("Relu") == 2
    x = np.random.default_rng(0).standard_normal((1, 64)).astype(np.float32)
    want = ort.InferenceSession(path).run(None, {"x": x})
    got = ort.InferenceSession(written).run(None, {"x": x})
    assert all(np.array_equal(a, b) for a, b in zip(want, got))


def test_recomputation_says_its_count_right_and_its_least_extra_compute(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One value computed again is "1 value"; the answer names the covering bound on extra
    compute beside what it pays, as `reorder --capacity` does."""
    path = str(EXAMPLES / "cnn_train.py")
    assert main(["fit", path, "--capacity", "50KiB"]) == 0
    out = capsys.readouterr().out
    assert "1 value computed again" in out and "1 values" not in out, out
    assert "at least" in out and "gap" in out, out
