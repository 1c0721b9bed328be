"""Pieces of a step on threads (pipelines/engine/threads.py): results in the items' order, and what
the pieces share built once however many threads ask for it at the same moment. In process, no Spark."""
from __future__ import annotations

import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from pipelines.engine.threads import Memo, each


def test_each_gives_the_results_in_the_items_order_whatever_the_weights():
    items = list(range(7))
    assert each(lambda i: i * i, items, weight=lambda i: i % 3) == [i * i for i in items]


def test_a_memo_builds_each_key_once_while_threads_ask_for_it_at_once():
    """Eight threads ask for two keys at the same moment, each build slow enough for the others
    to arrive while it runs: each key is built once and every thread gets that one value."""
    memo: Memo[str, object] = Memo()
    builds: Counter[str] = Counter()
    start = threading.Barrier(8)

    def build(key: str) -> object:
        builds[key] += 1
        time.sleep(0.05)
        return object()

    def ask(i: int) -> object:
        key = "ab"[i % 2]
        start.wait()
        return memo.get(key, lambda: build(key))

    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(ask, range(8)))
    assert builds == {"a": 1, "b": 1}
    assert len({id(value) for value in got[0::2]}) == 1 and len({id(value) for value in got[1::2]}) == 1
    assert got[0] is not got[1]
    assert "a" in memo and dict(memo.items()).keys() == {"a", "b"}
