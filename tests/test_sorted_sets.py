"""Sets of numbers made by sorting (:mod:`pipelines.sorted_sets`) give what numpy's set functions give."""
import numpy as np

from pipelines.sorted_sets import distinct, repeats, union


def test_sets_by_sorting_are_numpys():
    """On empty, one-value and random arrays (negative int64 codes, uint64 hashes above 2**63,
    few and many repeats), ``distinct`` is ``np.unique``, ``union`` is ``np.union1d``, with their
    dtypes, and ``repeats`` says whether ``np.unique`` dropped anything."""
    rng = np.random.default_rng(3)
    arrays = [np.zeros(0, np.int64), np.array([5], np.int64), np.array([7, 7], np.uint64)]
    for size, spread in ((10, 3), (1000, 10**9), (5000, 200)):
        arrays.append(rng.integers(-spread, spread, size, dtype=np.int64))
        arrays.append(rng.integers(0, spread, size, dtype=np.uint64) + np.uint64(2**63))
    for a in arrays:
        got, want = distinct(a), np.unique(a)
        assert got.dtype == want.dtype and got.tolist() == want.tolist()
        assert repeats(a) == (len(want) < len(a))
        for b in arrays:
            if a.dtype == b.dtype:
                got, want = union(a, b[: len(b) // 2]), np.union1d(a, b[: len(b) // 2])
                assert got.dtype == want.dtype and got.tolist() == want.tolist()
