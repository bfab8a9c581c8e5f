"""Shared mutable state across methods beside several memories (`shared_state_pass`).

- A decoder with a KV cache exported with `prefill` and `decode` methods sharing the
  cache, planned by ExecuTorch's `MemoryPlanningPass(share_mutable_buffers=True)` and by
  optplan's pass with one memory and with two (a fast one of 64 KiB): every `.pte` runs
  in ExecuTorch's runtime (methods sharing their arenas) over a prefill and ten decode
  steps with outputs equal bit for bit to greedy's; every cache buffer sits at the same
  memory id and offset in both methods, in the memory chosen for the state, after every
  method's activations there; the fast memory holds within its capacity.
- Bad choices of the state's memory are one clear error each, before any export.
- Random methods and state buffers (hypothesis): each buffer at one id and offset in
  every method, aligned, apart, after every method's bytes, within the capacity.

Skipped without executorch (and torch).
"""

from __future__ import annotations

import itertools
import math
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("torch", reason="torch is not installed (pip install torch, CPU build)")
pytest.importorskip(
    "executorch", reason="executorch is not installed (pip install -e '.[executorch]')"
)

import torch

import optplan.executorch as oet
from optplan.problem import Memory

sys.path.insert(0, str(Path(__file__).resolve().parent))
import executorch_decoder

FAST = 64 * 1024


@pytest.fixture(scope="module")
def greedy_outputs() -> list[torch.Tensor]:
    from executorch.exir.passes import MemoryPlanningPass

    program = executorch_decoder.export(MemoryPlanningPass(share_mutable_buffers=True))
    outs = executorch_decoder.run(program)
    reference = executorch_decoder.eager()
    assert all(torch.allclose(a, b, atol=1e-4) for a, b in zip(outs, reference))
    return outs


def _state_places(program: Any) -> dict[str, set[tuple[int, int]]]:
    """Per cache buffer, the (mem_id, offset) pairs it has over the methods."""
    places: dict[str, set[tuple[int, int]]] = {}
    for method in ("prefill", "decode"):
        exported = program.exported_program(method)
        signature = exported.graph_signature
        mutated = set(signature.buffers_to_mutate.values())
        buffers = signature.inputs_to_buffers
        for node in exported.graph_module.graph.nodes:
            if node.op == "placeholder" and buffers.get(node.name) in mutated:
                spec = node.meta["spec"]
                places.setdefault(buffers[node.name], set()).add((spec.mem_id, spec.mem_offset))
    return places


@pytest.mark.parametrize(
    ("memories", "state"),
    [([Memory("ram")], "ram"), ([Memory("fast", FAST), Memory("slow", cost=10)], "slow")],
    ids=["one_memory", "two_memories"],
)
def test_prefill_and_decode_run_as_greedy_with_state_shared(
    memories: list[Memory], state: str, greedy_outputs: list[torch.Tensor]
) -> None:
    program = executorch_decoder.export(oet.shared_state_pass(memories, state=state))
    outs = executorch_decoder.run(program)
    assert len(outs) == 11
    assert all(torch.equal(a, b) for a, b in zip(greedy_outputs, outs))
    places = _state_places(program)
    state_id = 1 + [m.name for m in memories].index(state)
    assert len(places) == 2 * executorch_decoder.LAYERS
    assert all(len(found) == 1 for found in places.values())  # one place in every method
    plans = program.executorch_program.execution_plan
    assert {mem_id for found in places.values() for mem_id, _ in found} == {state_id}
    offsets = sorted(offset for found in places.values() for _, offset in found)
    assert len(set(offsets)) == len(offsets)  # each buffer its own bytes
    sizes = [list(plan.non_const_buffer_sizes) for plan in plans]
    assert all(s == sizes[0] for s in sizes)  # the state's end sets every method's size
    if len(memories) == 2:
        assert all(s[1] <= FAST for s in sizes)


def test_state_lies_after_every_methods_activations() -> None:
    program = executorch_decoder.export(oet.shared_state_pass([Memory("ram")], state="ram"))
    start = min(offset for found in _state_places(program).values() for _, offset in found)
    for method in ("prefill", "decode"):
        exported = program.exported_program(method)
        nodes = list(exported.graph_module.graph.nodes)
        buffers = exported.graph_signature.inputs_to_buffers
        state = {id(n.meta["spec"]) for n in nodes if n.name in buffers}
        mutated = set(exported.graph_signature.buffers_to_mutate.values())
        cache = [n.meta["spec"] for n in nodes if buffers.get(n.name) in mutated]
        objects = {spec.mem_obj_id for spec in cache}
        for node in nodes:
            spec = node.meta.get("spec")
            if not hasattr(spec, "mem_id") or id(spec) in state or spec.mem_id != 1:
                continue  # a copy_ into the cache has the cache's own spec
            assert spec.mem_offset + spec.allocated_memory <= start, node.name
            # no activation shares a memory object with the state (mem_obj_id)
            assert spec.mem_obj_id not in objects, node.name
        assert len(objects) == len(cache)  # each buffer of the state an object of its own


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"memories": [Memory("a")], "state": "b"}, r"state: no memory is named 'b'"),
        (
            {"memories": [Memory("a"), Memory("b"), Memory("c")], "state": "c"},
            r"'c' is memory id 3, but ExecuTorch's runtime shares only ids \(1, 2\)",
        ),
    ],
)
def test_bad_state_memory_is_one_clear_error(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        oet.shared_state_pass(**kwargs)


def test_state_larger_than_its_memory_is_named() -> None:
    with pytest.raises(Exception, match=r"shared state needs \d+ bytes, but memory 'small'"):
        executorch_decoder.export(
            oet.shared_state_pass([Memory("small", 4096), Memory("big")], state="small")
        )


class _Module:
    def __init__(self, sizes: list[int]) -> None:
        self.meta = {"non_const_buffer_sizes": sizes}


class _Spec:
    def __init__(self, nbytes: int) -> None:
        self.nbytes, self.allocated_memory = nbytes, nbytes
        self.mem_id: int | None = None
        self.mem_offset: int | None = None
        self.mem_obj_id: int | None = None

    def realign(self, alignment: int) -> int:
        self.allocated_memory = -(-self.nbytes // alignment) * alignment
        return self.allocated_memory


@settings(deadline=None, max_examples=200)
@given(
    st.lists(st.lists(st.integers(0, 5000), min_size=1, max_size=3), min_size=1, max_size=4),
    st.lists(st.integers(1, 900), min_size=1, max_size=6),
    st.sampled_from([1, 2]),
    st.sampled_from([1, 16, 64]),
    st.sampled_from([1, 32]),
    st.one_of(st.none(), st.integers(1, 12000)),
)
def test_state_is_placed_once_after_every_method(
    method_sizes: list[list[int]],
    state_bytes: list[int],
    state_id: int,
    alignment: int,
    memory_alignment: int,
    capacity: int | None,
) -> None:
    """Random methods (their buffer sizes per id) and state buffers, each seen by every
    method: every buffer of the state gets the same id and offset in every method, aligned,
    apart from the others, after every method's bytes in that id, inside each method's
    size for it; a state past the capacity is the one error."""
    from optplan.integrations.executorch_state import place_state

    memories = [Memory("a"), Memory("b", capacity, memory_alignment)]
    if state_id == 1:
        memories.reverse()
    algo = oet.algorithm("greedy", memories=memories)
    modules = [_Module([0, *sizes]) for sizes in method_sizes]
    before = [list(m.meta["non_const_buffer_sizes"]) for m in modules]
    specs = {f"cache{k}": [_Spec(n) for _ in modules] for k, n in enumerate(state_bytes)}
    state = SimpleNamespace(mutable_buffers={k: set(v) for k, v in specs.items()},
                            maybe_mutable_buffers={}, graph_modules=modules)  # fmt: skip
    try:
        place_state(state, algo, state_id, alignment)
    except ValueError as error:
        assert capacity is not None and "past its capacity" in str(error)
        return
    step = alignment * memory_alignment // math.gcd(alignment, memory_alignment)
    places = []
    for together in specs.values():
        assert len({(s.mem_id, s.mem_offset) for s in together}) == 1
        spec = together[0]
        assert spec.mem_id == state_id and spec.mem_offset % step == 0
        places.append((spec.mem_offset, spec.mem_offset + spec.allocated_memory))
    places.sort()
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(places))
    for old, module in zip(before, modules):
        size = module.meta["non_const_buffer_sizes"]
        assert places[0][0] >= max((o[state_id] if state_id < len(o) else 0) for o in before)
        assert places[-1][1] <= size[state_id]
        others = [k for k in range(len(size)) if k != state_id]
        assert all(size[k] == (old[k] if k < len(old) else 0) for k in others)
    if capacity is not None:
        assert places[-1][1] <= capacity
