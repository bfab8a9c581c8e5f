"""Two spellings TVM 0.27's printer uses that the reader takes (no TVM needed):

- `R.call_tir(f, R.tuple(), out_ty=...)`: a kernel call without tensor arguments (GPT-2's
  and LLaMA's causal masks, built by `full` + `triu` and fused into one kernel);
- `cls = Module` at the top of a module's function, before its `cls.kernel(...)` calls.

Both read as what they mean, print back in optplan's own spelling, and read again the same.
"""

from __future__ import annotations

import textwrap

from hypothesis import given
from hypothesis import strategies as st

from optplan.analysis.types import infer_types
from optplan.frontends.script import parse, print_program
from optplan.ir import Call, TensorType

MASK = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def fused_full_triu(out: T.Buffer((T.int64(16), T.int64(16)), "float32")):
        T.evaluate(0)

    @R.function
    def main(x: R.Tensor((16, 16), dtype="float32")) -> R.Tensor((16, 16), dtype="float32"):
        cls = Module
        with R.dataflow():
            mask = R.call_tir(cls.fused_full_triu, R.tuple(), out_ty=R.Tensor((16, 16), dtype="float32"))
            y = R.add(x, mask)
            R.output(y)
        return y
"""


def test_call_tir_without_tensor_arguments_reads_as_a_call_with_none() -> None:
    program = infer_types(parse(textwrap.dedent(MASK)))
    mask = program.main.body.blocks[0].bindings[0]
    assert mask.value == Call(
        "call_tir",
        (),
        (("kernel", "fused_full_triu"), ("out_ty", TensorType((16, 16), "float32"))),
    )
    assert mask.type == TensorType((16, 16), "float32")
    again = parse(print_program(program))
    assert again.main.body == program.main.body


@given(st.integers(min_value=1, max_value=4), st.booleans())
def test_module_alias_is_dropped_wherever_the_body_starts(count: int, with_attrs: bool) -> None:
    attrs = '        R.func_attr({"num_input": 1})\n' if with_attrs else ""
    aliases = "        cls = Module\n" * count
    text = MASK.replace("        cls = Module\n", attrs + aliases)
    program = parse(textwrap.dedent(text))
    assert program.main == parse(textwrap.dedent(MASK.replace(
        "        cls = Module\n", attrs
    ))).main  # fmt: skip
