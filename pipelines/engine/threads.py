"""Independent pieces of a batch's in-process work, spread over the machine's cores on threads.

Arrow's kernels and encoders and delta-rs's writes release the GIL, so pieces that share nothing
(each windowed query's step, each query's state encoded for a fold, each path walk and each
query's delta rules of a step) run side by side. What they do share is built on first use, once
(:class:`Memo`): the tables a step reads and the indexes it looks them up through.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Generic, Hashable, Mapping, Sequence, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")
Key = TypeVar("Key", bound=Hashable)


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


class Memo(Generic[Key, Result]):
    """Values by key, each built on first use and once, however many threads ask for it at once
    (a step's path walks look up the same edge views: building a view's index twice costs what
    the threads gain). Keys are built side by side; a thread asking for a key being built waits
    for it."""

    def __init__(self, values: Mapping[Key, Result] | None = None) -> None:
        self._values: dict[Key, Result] = dict(values or {})
        self._building: dict[Key, threading.Lock] = {}
        self._lock = threading.Lock()

    def get(self, key: Key, build: Callable[[], Result]) -> Result:
        if key in self._values:
            return self._values[key]
        with self._lock:
            building = self._building.setdefault(key, threading.Lock())
        with building:
            if key not in self._values:
                self._values[key] = build()
        return self._values[key]

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def items(self) -> list[tuple[Key, Result]]:
        """The values built so far (a copy: another thread may be adding one)."""
        return list(self._values.items())
