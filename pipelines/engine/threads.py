"""Independent pieces of a batch's in-process work, spread over the machine's cores on threads.

Arrow's kernels and encoders and delta-rs's writes release the GIL, so pieces that share nothing
(each windowed query's step, each query's state encoded for a fold) run side by side.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


def each(work: Callable[[Item], Result], items: Sequence[Item],
         weight: Callable[[Item], int] | None = None) -> list[Result]:
    """``work(item)`` for every item on a thread per core, the results in the items' order; the
    heaviest first by ``weight`` (a long piece started last would run alone at the end). Fewer
    than two items run on the calling thread."""
    if len(items) < 2:
        return [work(item) for item in items]
    order = sorted(range(len(items)), key=lambda i: -weight(items[i])) if weight else list(range(len(items)))
    with ThreadPoolExecutor(min(len(items), os.cpu_count() or 1)) as pool:
        done = dict(zip(order, pool.map(work, [items[i] for i in order])))
    return [done[i] for i in range(len(items))]
