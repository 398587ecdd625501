"""CPU lab: the categorical policy simulation (paper section 5.1) and Lemma 3.1's tail-miss probability.

Importing this package is light (NumPy only); the simulation modules import torch when used.
"""

from fgrpo_verl.sim.tail_miss import (
    TailMissPeak,
    active_probability,
    group_size_below,
    tail_miss_peak,
    tail_miss_probability,
)

__all__ = [
    "TailMissPeak",
    "active_probability",
    "group_size_below",
    "tail_miss_peak",
    "tail_miss_probability",
]
