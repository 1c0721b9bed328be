"""Sets of numbers (vertex, pair and key codes, hashes) as sorted numpy arrays, made by sorting.

numpy 2.4's ``np.unique`` of an array alone (no ``return_*`` argument) hashes the values: 143-239
ms for 250,000 int64 where sorting them takes 3-4 ms, and ``np.union1d`` goes through it. The path
operator makes such sets at every round of a walk, and a gold MERGE asks whether a change's key
hashes repeat; they are made here instead.
"""
from __future__ import annotations

import numpy as np


def distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values of ``values`` (flattened), ascending: what ``np.unique(values)`` gives."""
    ordered = np.sort(np.asarray(values), axis=None)
    if len(ordered) < 2:
        return ordered
    first = np.empty(len(ordered), bool)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    return ordered[first]


def union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The distinct values of ``a`` and ``b``, ascending: what ``np.union1d(a, b)`` gives."""
    return distinct(np.concatenate([np.ravel(a), np.ravel(b)]))


def repeats(values: np.ndarray) -> bool:
    """Whether a value of ``values`` occurs more than once."""
    ordered = np.sort(np.asarray(values), axis=None)
    return bool(np.any(ordered[1:] == ordered[:-1]))


def isin(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """Which of ``values`` ``sorted_set`` (sorted, distinct) holds."""
    if not len(sorted_set):
        return np.zeros(len(values), bool)
    at = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return sorted_set[at] == values
