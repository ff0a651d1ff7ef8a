"""Run boundaries in numpy columns, shared by the tie kernels of the ranking metrics."""

from __future__ import annotations

import numpy as np


def run_starts(*keys: np.ndarray) -> np.ndarray:
    """True where the key tuple differs from the previous row's (and at the first row).

    ``!=``, not a difference, compares the rows: equal infinite scores stay one run.
    """
    new = np.zeros(len(keys[0]), dtype=bool)
    new[:1] = True
    for key in keys:  # a loop over the few key columns
        new[1:] |= key[1:] != key[:-1]
    return new
