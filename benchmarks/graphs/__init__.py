"""Graphs where the order of ops matters, for `benchmarks/reorder.py` and the tests."""

from __future__ import annotations

from collections.abc import Callable

from optplan.ir import Program

from .cells import inception, nasnet, randwire
from .nets import long_skip, unet
from .training import cnn_train, mlp_train, transformer_train

GRAPHS: dict[str, Callable[[], Program]] = {
    "inception": inception,
    "inception_8": lambda: inception(cells=8),
    "nasnet": nasnet,
    "randwire_8": lambda: randwire(nodes=8, p=0.4, seed=2),
    "randwire_24": randwire,
    "randwire_48": lambda: randwire(nodes=48, p=0.15, seed=1),
    "unet": unet,
    "long_skip": long_skip,
    "mlp_train": mlp_train,
    "cnn_train": cnn_train,
    "transformer_train": transformer_train,
}
