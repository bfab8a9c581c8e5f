"""The program as each lever leaves it (`levers.Form`), made by the passes that hold the
levers, never written again here:

1. in place: `passes.use_inplace_calls`;
2. order: `passes.reorder` with `schedule.Scheduler("auto")`, and in place after it
   (the new order may let more ops run in place, as `--reorder --inplace` does);
3. recompute: `passes.recompute` (`schedule.remat` on every block), of the program and of
   its in-place form;
4. a second memory: the memories given (`levers.with_fast_memory`), of the program and
   of its best free form.

Each maker returns the form, or a reason it has none (a lever that has nothing to change
here is not tried).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from optplan.budget import callee, order_steps
from optplan.fitting.levers import COMPUTE, FREE, TRAFFIC, Form, Setting, with_fast_memory
from optplan.ir import Program
from optplan.passes import use_inplace_calls
from optplan.passes.recompute import recompute
from optplan.passes.reorder import reorder
from optplan.schedule import Scheduler

AS_IS = "as is"
INPLACE = "in place"
ORDER = "order"
ORDER_INPLACE = "order + in place"
RECOMPUTE = "recompute"
RECOMPUTE_INPLACE = "recompute + in place"
MEMORY = "second memory"
MEMORY_MIX = "order + in place + second memory"


def free_forms(program: Program, setting: Setting) -> tuple[list[Form], int]:
    """As is, in place, the best order, both: the levers that cost nothing; and the
    order search's proven bound on the live bytes of every order."""
    inplace = use_inplace_calls(program)
    work, seconds = callee(setting.seconds)
    steps = None if work is None else order_steps(work)
    scheduler = Scheduler("auto", time_limit=seconds, work=steps)
    reordered = reorder(program, scheduler, plan_outputs=setting.plan_outputs)
    both = use_inplace_calls(reordered.program)
    order_note = (
        f"operators reordered (live-bytes peak {reordered.original_peak_bytes} -> "
        f"{reordered.peak_bytes}, {len(reordered.blocks)} dataflow blocks)"
    )
    made = [
        Form(AS_IS, FREE, program, "nothing changed"),
        Form(INPLACE, FREE, inplace, "elementwise ops write over inputs that die there"),
        Form(ORDER, FREE, reordered.program, order_note),
        Form(ORDER_INPLACE, FREE, both, order_note + ", then in place"),
    ]
    return made, reordered.bound_bytes


@dataclass(frozen=True, slots=True)
class Recomputing:
    """What recomputation made of one form: the rewritten form, or the reason there is
    none; and the proven memory bound of its blocks (the ops it may compute again as
    `passes.recompute` allows them), with why."""

    lever: str
    form: Form | None
    reason: str
    bound_bytes: int
    bound_reason: str


def recompute_forms(
    program: Program, setting: Setting, allow: Callable[[str], bool] | None
) -> list[Recomputing]:
    """The program, and its in-place form, rewritten to compute values again within the
    capacity."""
    found: list[Recomputing] = []
    for lever, source in ((RECOMPUTE, program), (RECOMPUTE_INPLACE, use_inplace_calls(program))):
        work, seconds = callee(setting.seconds)
        result = recompute(
            source,
            setting.capacity,
            time_limit=seconds,
            work=work,
            plan_outputs=setting.plan_outputs,
            alignment=setting.alignment,
            allow=allow,
        )
        tightest = max((b.memory_bound for b in result.blocks), key=lambda m: m.bytes, default=None)
        bound = (tightest.bytes, tightest.reason) if tightest else (0, "")
        if not result.status.has_plan:
            found.append(Recomputing(lever, None, result.reason or result.status.value, *bound))
            continue
        count = len(result.copies)
        changed = (
            f"{count} value{'' if count == 1 else 's'} computed again "
            f"({', '.join(f'{new} of {old}' for new, old in list(result.copies.items())[:6])}"
            f"{', ...' if count > 6 else ''}), extra compute {result.extra_cost} "
            f"of {result.total_cost}, at least {result.lower_bound} "
            f"(gap {result.gap_percent:.1f} %)"
        )
        if lever == RECOMPUTE_INPLACE:
            changed = "in place, then " + changed
        form = Form(
            lever,
            COMPUTE,
            result.program,
            changed,
            dict(result.copies),
            result.extra_cost,
            result.total_cost,
        )
        found.append(Recomputing(lever, form, "", *bound))
    return found


def memory_forms(program: Program | None, best_free: Form | None, setting: Setting) -> list[Form]:
    """The program, and its best free form, across the memories given."""
    assert setting.memories is not None
    memories = with_fast_memory(setting.capacity, setting.memories)
    names = ", ".join(str(m) for m in memories)
    forms = [Form(MEMORY, TRAFFIC, program, f"tensors placed across {names}", memories=memories)]
    if best_free is not None and best_free.program is not None:
        forms.append(
            Form(
                MEMORY_MIX,
                TRAFFIC,
                best_free.program,
                f"{best_free.changed}; tensors placed across {names}",
                memories=memories,
            )
        )
    return forms
