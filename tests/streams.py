"""Deterministic random update streams over a small vocabulary, written as JSON Lines landing files."""
from __future__ import annotations

import json
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

EX = "http://example.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"
PREFIXES = f"PREFIX ex: <{EX}>\nPREFIX xsd: <{XSD}>\n"


def iri(local: str) -> str:
    return f"<{EX}{local}>"


ENTITIES = [iri(n) for n in "abcdef"]
TYPES = [iri("Person"), iri("Course")]


def candidate_triples() -> list[tuple[str, str, str]]:
    """Every triple the stream may touch: links, types, typed and language-tagged literals."""
    triples = []
    for s in ENTITIES:
        for o in ENTITIES:
            triples.append((s, iri("knows"), o))
            if s != o:
                triples.append((s, iri("likes"), o))
        for t in TYPES:
            triples.append((s, iri("type"), t))
        for age in (18, 25, 30, 41):
            triples.append((s, iri("age"), f'"{age}"^^<{XSD}integer>'))
        triples.append((s, iri("name"), f'"{s[-2]}name"@en'))
        triples.append((s, iri("name"), f'"{s[-2]}nom"@fr'))
        triples.append((s, iri("label"), f'"ab{s[-2]}"'))
        triples.append((s, iri("label"), f'"AB{s[-2]}"'))
        triples.append((s, iri("label"), f'"{s[-2]}"^^<{EX}code>'))
    return triples


class Stream:
    """A seeded stream of batches of messages, and the graph each batch leaves behind."""

    def __init__(self, seed: int, batch_size: int = 30) -> None:
        self.rng = random.Random(seed)
        self.pool = candidate_triples()
        self.graph: set[tuple[str, str, str]] = set()
        self.batch_size = batch_size
        self.clock = datetime(2026, 11, 1, 9, 0, tzinfo=timezone.utc)

    def next_batch(self) -> list[dict]:
        """Inserts of new triples, deletes of present ones, re-inserts, and no-op updates."""
        messages = []
        for _ in range(self.batch_size):
            roll = self.rng.random()
            present = sorted(self.graph)
            absent = [t for t in self.pool if t not in self.graph]
            if roll < 0.55 or not present:
                triple, op = self.rng.choice(absent), "+"
            elif roll < 0.85:
                triple, op = self.rng.choice(present), "-"
            elif roll < 0.93:
                triple, op = self.rng.choice(present), "+"      # no-op: already present
            else:
                triple, op = self.rng.choice(absent), "-"       # no-op: absent
            messages.append(self.message(op, triple))
        return messages

    def message(self, op: str, triple: tuple[str, str, str]) -> dict:
        """Apply one update to the graph and return it as a message; tests script rare patterns with it."""
        if op == "+":
            self.graph.add(triple)
        else:
            self.graph.discard(triple)
        self.clock += timedelta(seconds=1)
        return {"time": self.clock.isoformat().replace("+00:00", "Z"), "op": op,
                "s": triple[0], "p": triple[1], "o": triple[2]}

    @staticmethod
    def write(path: Path, messages: list[dict]) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(m) + "\n" for m in messages), encoding="utf-8")
        return path
