"""Strings hashed from their Arrow buffers and found by hash (:mod:`pipelines.string_index`)."""
import random

import numpy as np
import pyarrow as pa
import pytest

from pipelines import string_index
from pipelines.string_index import HashIndex, HashTable, string_hashes


def test_equal_strings_hash_alike_however_held():
    """The same strings hash alike as strings, large strings, binaries, a slice (its offsets start
    inside the buffer, and not on a word), a chunked array and a dictionary array; nulls alike."""
    values = ["", "a", "a\x00", "ab", None, "abcdefgh", "abcdefghi", "abcdefgh\x00", "é" * 20, "x" * 100]
    hashes = string_hashes(pa.array(values, pa.string())).tolist()
    held = [pa.array(values, pa.large_string()),
            pa.array(["pad"] * 3 + values, pa.string()).slice(3),
            pa.chunked_array([values[:4], values[4:]], pa.string()),
            pa.array(values, pa.string()).dictionary_encode(),
            pa.array([None if v is None else v.encode() for v in values], pa.binary())]
    for layout in held:
        assert string_hashes(layout).tolist() == hashes
    assert len(set(hashes)) == len(values)
    # arrays whose data buffer is empty or absent: only empty strings, only nulls
    assert string_hashes(pa.array(["", ""])).tolist() == [hashes[0]] * 2
    assert string_hashes(pa.nulls(3, pa.string())).tolist() == [hashes[4]] * 3


def test_strings_that_differ_anywhere_hash_apart():
    """A string, its one-byte changes at every position (in every word), and the string a byte
    shorter or longer, hash apart; so do 200,000 IRIs sharing their long prefixes."""
    iri = "http://lakegraph.example/snb/person/123456789"
    variants = [iri, iri[:-1], iri + "0"] + [iri[:i] + chr(ord(iri[i]) ^ 1) + iri[i + 1:] for i in range(len(iri))]
    assert len(set(string_hashes(pa.array(variants)).tolist())) == len(variants)
    iris = pa.array([f"http://lakegraph.example/snb/{kind}/{i}" for kind in ("person", "post") for i in range(100_000)])
    assert len(np.unique(string_hashes(iris))) == len(iris)


@pytest.mark.parametrize("weak", [False, True])
def test_hash_index_finds_what_a_dict_finds(monkeypatch, weak):
    """Random strings indexed, then extended four times: every wanted value (held, absent, null,
    as strings or large strings) is found where a dict of the values finds it, through the index
    and through each older one, which keeps what it held. With a hash of two bits, most values
    share their hash with others, and the answers are the same: a hash only points at a value."""
    if weak:
        strong = string_index.string_hashes
        monkeypatch.setattr(string_index, "string_hashes", lambda values: strong(values) & np.uint64(3))
    rng = random.Random(5)

    def word() -> str:
        return "".join(rng.choice("ab\x00é") for _ in range(rng.randrange(20)))

    held = list(dict.fromkeys(word() for _ in range(200)))
    indexes = [(HashIndex.of(pa.array(held, pa.string())), list(held))]
    for step in range(5):
        for index, values in indexes:
            where = {v: i for i, v in enumerate(values)}
            wanted = [rng.choice(held) if rng.random() < 0.6 else None if rng.random() < 0.2 else word()
                      for _ in range(300)]
            kind = pa.large_string() if step % 2 else pa.string()
            assert index.positions(pa.array(wanted, kind)).tolist() == [where.get(v, -1) for v in wanted]
        held += [w for w in dict.fromkeys(word() for _ in range(60)) if w not in set(held)]
        indexes.append((indexes[-1][0].extended(pa.array(held, pa.string())), list(held)))


def test_hash_index_grows_past_its_table():
    """An index extended far beyond what its table had room for (a table is rebuilt larger once
    it would be half full) finds every value where it is, and each older index still finds only
    what it held: an extension never writes into a table an older index reads."""
    values = [f"http://example.org/n{i}" for i in range(10)]
    indexes = [(HashIndex.of(pa.array(values)), list(values))]
    for _ in range(6):
        values += [f"http://example.org/n{i}" for i in range(len(values), 3 * len(values))]
        indexes.append((indexes[-1][0].extended(pa.array(values)), list(values)))
    wanted = pa.array(values + ["http://example.org/absent"])
    for index, held in indexes:
        assert index.positions(wanted).tolist() == list(range(len(held))) + [-1] * (len(values) - len(held) + 1)


def test_hash_table_finds_every_row_of_a_hash():
    """The table's C probes against a dict of lists: hashes that collide in full and hashes that
    share only their low bits (their probe chains run into each other, and past the table's last
    slot back to its first) each find all their rows and only theirs, with the slot each sits in;
    so after the table is rebuilt and grown, and the older table keeps what it held."""
    rng = np.random.default_rng(11)
    table = HashTable(np.zeros(0, np.uint64), np.zeros(0, np.int64), room=40)
    size = len(table.row)
    # a few full hashes, each held by several rows, and hashes landing on the last slots
    hashes = np.concatenate([rng.choice(np.array([7, size - 1, 2 * size - 2, 3 * size - 1], np.uint64), 30),
                             rng.integers(0, 2**63, 10, dtype=np.uint64)])
    rows = np.arange(len(hashes), dtype=np.int64)
    table.insert(hashes, rows)
    wanted = np.concatenate([np.unique(hashes), np.array([12345, size - 1 + size * 5], np.uint64)])

    def expected(held_hashes: np.ndarray) -> set[tuple[int, int]]:
        return {(int(r), i) for i, w in enumerate(wanted) for r in np.flatnonzero(held_hashes == w)}

    found, owners, slots = table.find(wanted)
    assert set(zip(found.tolist(), owners.tolist())) == expected(hashes)
    assert (table.row[slots] == found).all() and (table.hash[slots] == wanted[owners]).all()
    older = (table.hash.copy(), table.row.copy())
    more = rng.integers(0, 2**63, 200, dtype=np.uint64)
    grown = table.grown(more, np.arange(len(hashes), len(hashes) + 200, dtype=np.int64))
    assert len(grown.row) > size
    wanted = np.concatenate([wanted, more[:50]])
    found, owners, _ = grown.find(wanted)
    assert set(zip(found.tolist(), owners.tolist())) == expected(np.concatenate([hashes, more]))
    assert (table.hash == older[0]).all() and (table.row == older[1]).all()
