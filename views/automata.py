"""A property path as a minimal deterministic automaton over edge symbols.

A symbol is ``(predicate, direction)``: an edge followed forwards (``>``) or backwards (``<``).
Negated property sets match every predicate but a few, so the alphabet is the predicates the path
names plus :data:`OTHER`, standing for every predicate it does not name; an edge maps to exactly
one symbol per direction.

The construction is the textbook one: Thompson's NFA, the subset construction, Moore's partition
refinement, and states renumbered in breadth-first order from the start (symbols sorted), so the
same path always gives the same numbers (they are stored in the path's state table). The automaton
is partial: a state from which no final state can be reached is dropped, so a walk stops as soon
as it cannot succeed.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import count
from typing import Iterator

from .paths import Alt, Link, Negated, Path, Repeat, Seq, predicates

#: The symbol of every predicate the path does not name (used by negated property sets only).
OTHER = ""
FORWARD, BACKWARD = ">", "<"

Symbol = tuple[str, str]


@dataclass(frozen=True)
class Automaton:
    """A minimal DFA: states ``0..states-1``, start ``0``; ``moves`` as ``(state, symbol, next)``
    sorted; ``symbols`` the alphabet (what the edges of the graph are classified into)."""

    states: int
    finals: tuple[int, ...]
    moves: tuple[tuple[int, Symbol, int], ...]
    symbols: tuple[Symbol, ...]

    @property
    def nullable(self) -> bool:
        """Whether the empty path matches (zero-length: each end is its own answer)."""
        return 0 in self.finals

    @property
    def uses_other(self) -> bool:
        """Whether some move reads :data:`OTHER` (then every edge of the graph may matter)."""
        return any(sym[0] == OTHER for _, sym, _ in self.moves)

    def table(self) -> dict[tuple[int, Symbol], int]:
        return {(q, sym): nxt for q, sym, nxt in self.moves}

    def describe(self) -> list[str]:
        """The automaton, one line per state, for ``lakegraph explain``."""
        lines = []
        for q in range(self.states):
            mine = [f"{'^' if sym[1] == BACKWARD else ''}{sym[0] or '(other)'} -> s{nxt}"
                    for p, sym, nxt in self.moves if p == q]
            tags = ("start " if q == 0 else "") + ("final" if q in self.finals else "")
            lines.append(f"s{q}{f' ({tags.strip()})' if tags else ''}: " + (", ".join(mine) or "no moves"))
        return lines

    @classmethod
    def from_dict(cls, data: dict) -> "Automaton":
        return cls(data["states"], tuple(data["finals"]),
                   tuple((q, (sym[0], sym[1]), nxt) for q, sym, nxt in data["moves"]),
                   tuple((s[0], s[1]) for s in data["symbols"]))


def compile_path(path: Path) -> Automaton:
    """The minimal DFA of ``path`` (see the module text)."""
    named = predicates(path)
    alphabet = tuple(sorted({(p, d) for p in named for d in (FORWARD, BACKWARD)}
                            | ({(OTHER, d) for d in (FORWARD, BACKWARD)} if _negates(path) else set())))
    nfa = _Thompson(named)
    start, end = nfa.build(path)
    return _minimal(_determinise(nfa, start, end, alphabet), alphabet)


def _negates(path: Path) -> bool:
    if isinstance(path, Negated):
        return True
    if isinstance(path, (Seq, Alt)):
        return any(_negates(p) for p in path.parts)
    return isinstance(path, Repeat) and _negates(path.path)


class _Thompson:
    """Thompson's construction: ``moves`` as (state, symbol or None for epsilon, state)."""

    def __init__(self, named: tuple[str, ...]) -> None:
        self.named = named
        self.moves: list[tuple[int, Symbol | None, int]] = []
        self._ids: Iterator[int] = count()

    def build(self, path: Path) -> tuple[int, int]:
        a, b = next(self._ids), next(self._ids)
        if isinstance(path, Link):
            self.moves.append((a, (path.iri, BACKWARD if path.inverse else FORWARD), b))
        elif isinstance(path, Negated):
            for direction, excluded in ((FORWARD, path.forward), (BACKWARD, path.backward)):
                if excluded is not None:
                    for p in (*(p for p in self.named if p not in excluded), OTHER):
                        self.moves.append((a, (p, direction), b))
        elif isinstance(path, Seq):
            here = a
            for part in path.parts:
                s, e = self.build(part)
                self.moves += [(here, None, s)]
                here = e
            self.moves.append((here, None, b))
        elif isinstance(path, Alt):
            for part in path.parts:
                s, e = self.build(part)
                self.moves += [(a, None, s), (e, None, b)]
        else:
            s, e = self.build(path.path)
            self.moves += [(a, None, s), (e, None, b)]
            if path.min == 0:
                self.moves.append((a, None, b))
            if path.max is None:
                self.moves.append((e, None, s))
        return a, b


#: A DFA before minimisation: moves between state numbers (start 0), and the final states.
_Raw = tuple[dict[tuple[int, Symbol], int], list[int]]


def _determinise(nfa: _Thompson, start: int, end: int, alphabet: tuple[Symbol, ...]) -> _Raw:
    """The subset construction (the start's subset is state 0)."""
    eps: dict[int, set[int]] = {}
    on: dict[tuple[int, Symbol], set[int]] = {}
    for a, sym, b in nfa.moves:
        (eps.setdefault(a, set()) if sym is None else on.setdefault((a, sym), set())).add(b)

    def closure(states: set[int]) -> frozenset[int]:
        todo, seen = list(states), set(states)
        while todo:
            for nxt in eps.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return frozenset(seen)

    first = closure({start})
    subsets, index, moves, todo = [first], {first: 0}, {}, [first]
    while todo:
        current = todo.pop()
        for sym in alphabet:
            target = closure({n for q in current for n in on.get((q, sym), ())})
            if not target:
                continue
            if target not in index:
                index[target] = len(subsets)
                subsets.append(target)
                todo.append(target)
            moves[(index[current], sym)] = index[target]
    return moves, [i for i, subset in enumerate(subsets) if end in subset]


def _minimal(dfa: _Raw, alphabet: tuple[Symbol, ...]) -> Automaton:
    """Moore's refinement on the live states, renumbered breadth-first from the start."""
    moves, finals = dfa
    live = set(finals)
    changed = True
    while changed:                      # states from which a final state is reachable
        changed = False
        for (q, _), nxt in moves.items():
            if nxt in live and q not in live:
                live.add(q)
                changed = True
    if 0 not in live:                   # the path matches nothing
        return Automaton(1, (), (), alphabet)
    moves = {k: v for k, v in moves.items() if k[0] in live and v in live}
    block = {q: int(q in finals) for q in live}
    while True:
        signature = {q: (block[q], tuple(block.get(moves.get((q, s)), -1) if (q, s) in moves else -1
                                        for s in alphabet)) for q in live}
        numbering: dict[tuple, int] = {}
        refined = {q: numbering.setdefault(sig, len(numbering)) for q, sig in sorted(signature.items())}
        if len(numbering) == len(set(block.values())):
            break
        block = refined
    # renumber the blocks breadth-first from the start's block
    order = {block[0]: 0}
    queue = [block[0]]
    by_block = {block[q]: q for q in sorted(live, reverse=True)}
    out = []
    while queue:
        b = queue.pop(0)
        q = by_block[b]
        for sym in alphabet:
            if (q, sym) in moves:
                target = block[moves[(q, sym)]]
                if target not in order:
                    order[target] = len(order)
                    queue.append(target)
                out.append((order[b], sym, order[target]))
    final_blocks = sorted({order[block[q]] for q in finals if q in live})
    return Automaton(len(order), tuple(final_blocks), tuple(sorted(out)), alphabet)
