"""The path step's forest of integer-coded trees keeps its key index right as rows go (a cut) and
come (the rounds of a walk), without sorting again: every node is found at its row, and no node
it does not hold is found."""
from __future__ import annotations

import numpy as np

from pipelines.engine.path_forest import Forest, node_keys

#: Node keys drawn from (root, node, state) in 20 x 10 x 10: small enough that writes hit nodes
#: the forest holds as often as new ones.
SPACE = 2000


def _parts(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return keys // 100, (keys // 10) % 10, keys % 10


def test_rows_found_by_key_after_cuts_and_writes():
    rng = np.random.default_rng(1)
    every = node_keys(*_parts(np.arange(SPACE)))
    for trial in range(200):
        root, node, state = _parts(np.unique(rng.integers(0, SPACE, rng.integers(0, 50))))
        forest = Forest(root, node, state, node.copy(), state.copy(), rng.integers(0, 9, len(root)))
        assert (forest.find(forest.keys) == np.arange(len(forest))).all()
        after = forest.without(rng.random(len(forest)) < 0.3)
        for _ in range(3):
            root, node, state = _parts(np.unique(rng.integers(0, SPACE, rng.integers(0, 20))))
            keys = node_keys(root, node, state)
            after.write(after.find(keys), keys, root, node, state, node, state, rng.integers(0, 9, len(keys)))
        rows = {key: row for row, key in enumerate(after.keys.tolist())}
        assert len(rows) == len(after), f"trial {trial}: a node written twice"
        assert after.find(every).tolist() == [rows.get(key, -1) for key in every.tolist()], f"trial {trial}"
