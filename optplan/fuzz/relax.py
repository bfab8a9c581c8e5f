"""`optplan fuzz tvm`: TVM's own memory passes on random Relax programs, judged by optplan.

Per example (a `RelaxCase` from `optplan.strategies.relax`):

1. Print the program as TVMScript (`optplan.frontends.script.print_program`) and parse it with
   TVM's parser; a program TVM rejects is skipped (it says nothing about the passes).
2. Bind the weights as model constants (`relax.transform.BindParams`), as an ONNX import
   does, so that writing them is a miscompilation.
3. Run TVM's pipeline as `tvm.compile` does around the memory passes
   (`PIPELINE`): DecomposeOpsForInference, DataflowUseInplaceCalls, LegalizeOps,
   AnnotateTIROpPattern, RewriteDataflowReshape (reshape becomes a view again),
   ToNonDataflow, RemovePurityChecking, CallTIRRewrite, StaticPlanBlockMemory,
   LowerAllocTensor, KillAfterLastUse. A pass that raises is a failure (`tvm-crash`).
4. Print TVM's planned `main` and judge it with `optplan check`'s machinery
   (`optplan.runtime.check.check_program`): the extracted plan validates (`invalid-plan`), the
   replay in shared, poisoned storages matches a fresh run bit for bit (`replay-differs`)
   and never writes a parameter or a constant (`constant-written`, checked by read-only
   arrays). Text optplan cannot read is a failure of optplan's reader (`unreadable`).
5. Kills: no `R.memory.kill_tensor(v)` comes before a use of `v` (`use-after-kill`).

The reproducer is the shrunk input program as TVMScript, headed by the violated property,
the weights that were bound, and the pipeline.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from optplan.errors import InputError
from optplan.fuzz.properties import Failure
from optplan.ir import Call, Expr, Program, Tuple, TupleGetItem, Var, iter_bindings

PIPELINE = (
    "DecomposeOpsForInference",
    "DataflowUseInplaceCalls",
    "LegalizeOps",
    "AnnotateTIROpPattern",
    "RewriteDataflowReshape",
    "ToNonDataflow",
    "RemovePurityChecking",
    "CallTIRRewrite",
    "StaticPlanBlockMemory",
    "LowerAllocTensor",
    "KillAfterLastUse",
)


class TvmTarget:
    """Random Relax programs through TVM's pipeline (steps 1-5)."""

    label = "tvm"
    stem = "tvm"

    def __init__(self) -> None:
        try:
            import tvm  # type: ignore[import-untyped]
            from tvm import relax  # type: ignore[import-untyped]
            from tvm.script import ir, tirx  # type: ignore[import-untyped]
            from tvm.script import relax as script_relax
            from tvm.script.parser import parse  # type: ignore[import-untyped]
        except ImportError:
            raise InputError("fuzz tvm needs TVM: pip install 'optplan[tvm]'") from None
        self.tvm, self.relax = tvm, relax
        names = {"I": ir, "R": script_relax, "T": tirx}
        self.parse = lambda text: parse(text, names)

    def strategy(self) -> st.SearchStrategy[Any]:
        from optplan.strategies.relax import relax_cases

        return relax_cases()

    def size(self, example: Any) -> int:
        return int(example.bindings)

    def judge(self, example: Any) -> Failure | None:
        from optplan.frontends.script import print_program

        text = print_program(example.program)
        try:
            function = self.parse(text)
        except Exception:  # noqa: BLE001 - TVM rejects what it cannot type: nothing to judge
            return None
        try:
            planned = self.pipeline(function, weight_values(example))
        except Exception as error:  # noqa: BLE001 - a pass that raises is the finding
            first = (str(error).strip().splitlines() or [type(error).__name__])[-1]
            return Failure("tvm-crash", f"{type(error).__name__}: {first[:200]}")
        return judge_planned(planned)

    def pipeline(self, function: Any, weights: dict[str, np.ndarray]) -> str:
        """TVM's planned `main` as text (steps 2 and 3)."""
        tvm, relax = self.tvm, self.relax
        module = tvm.IRModule({"main": function.with_attr("global_symbol", "main")})
        passes = [relax.transform.BindParams("main", weights)]
        passes += [getattr(relax.transform, name)() for name in PIPELINE]
        with tvm.transform.PassContext(opt_level=3):
            planned = tvm.transform.Sequential(passes)(module)
        return str(planned["main"].script(show_meta=False))

    def reproducer(self, example: Any, failure: Failure) -> tuple[str, str]:
        from optplan.frontends.script import print_program

        header = [
            f"# {failure}",
            f"# weights bound as constants: {', '.join(example.weights) or 'none'}",
            f"# TVM pipeline: BindParams, {', '.join(PIPELINE)}",
        ]
        return ".py", "\n".join(header) + "\n" + print_program(example.program)


def weight_values(case: Any) -> dict[str, np.ndarray]:
    """A value for every weight of `case`, from a fixed seed (the values do not matter:
    what is judged is where the program writes)."""
    rng = np.random.default_rng(0)
    shapes = {p.var.name: p.type.shape for p in case.program.functions[0].params}
    return {name: rng.random(shapes[name], dtype=np.float32) for name in case.weights}


def judge_planned(text: str) -> Failure | None:
    """Steps 4 and 5 on TVM's printed `main`."""
    from optplan.frontends.script import parse
    from optplan.runtime.check import check_program

    try:
        program = parse(text, "tvm-planned.py")
        report = check_program(program, path="tvm-planned.py")
    except InputError as error:
        return Failure("unreadable", f"optplan cannot read TVM's plan: {error}")
    if report.violations:
        return Failure("invalid-plan", report.violations[0])
    if report.replay is not None:
        kind = "constant-written" if "read-only" in report.replay else "replay-differs"
        return Failure(kind, report.replay.removeprefix("tvm-planned.py:"))
    return use_after_kill(program)


def use_after_kill(program: Program) -> Failure | None:
    """The first variable used after `R.memory.kill_tensor` of it (step 5)."""
    killed: dict[str, int] = {}
    for point, binding in enumerate(iter_bindings(program.functions[0].body)):
        value = binding.value
        if isinstance(value, Call) and value.op == "memory.kill_tensor":
            for name in _names(value):
                killed.setdefault(name, point)
            continue
        for name in _names(value):
            if name in killed:
                return Failure(
                    "use-after-kill",
                    f"{name!r} is used at binding {point} after its kill at binding {killed[name]}",
                )
    return None


def _names(expr: Expr) -> list[str]:
    match expr:
        case Var(name=name):
            return [name]
        case Call(args=items) | Tuple(fields=items):
            return [n for item in items for n in _names(item)]
        case TupleGetItem(tuple_value=inner):
            return _names(inner)
    return []
