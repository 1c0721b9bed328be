"""SPARQL 1.1 property paths: the path model, and the translation that keeps the spec's multiplicities.

A path between two nodes of a triple pattern is translated as the spec does (section 18.2.2.4):

* an IRI is a triple pattern; ``^iri`` the same pattern with its ends swapped;
* ``p1/p2`` is a join through a fresh variable, so a sequence keeps multiplicities (two middle
  nodes give two rows), and each part is translated in turn;
* a negated property set of one direction, ``!iri`` or ``!(a|b)`` (or ``!^a``), matches one edge
  whose predicate is none of those: a triple pattern with a fresh predicate variable and a FILTER,
  again with the multiplicities of its edges (two predicates from x to y give two rows);
* everything else (``*``, ``+``, ``?``, a top-level ``|``, a negated set of both directions) is a
  :class:`PathPattern`, kept by the path operator as a **set** of (start, end) pairs: the spec's
  ``ALP`` gives sets for ``*`` and ``+``, and for ``?`` and ``|`` (where the spec is ambiguous and
  engines differ) lakegraph answers sets too, as oxigraph does.

Inverses are pushed down to the links first (``^(p/q)`` is ``^q/^p``, ``^(p|q)`` is ``^p|^q``,
``^(p*)`` is ``(^p)*``), so a translated pattern never holds an inverse of anything but an IRI.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Union

from .model import Compare, Const, Expr, Node, TriplePattern, Var


@dataclass(frozen=True)
class Link:
    """One edge labelled ``iri`` (canonical N-Triples), followed forwards, or backwards when ``inverse``."""

    iri: str
    inverse: bool = False


@dataclass(frozen=True)
class Negated:
    """A negated property set: one edge whose predicate is not in ``forward`` (followed forwards)
    or not in ``backward`` (followed backwards); None leaves that direction out."""

    forward: tuple[str, ...] | None
    backward: tuple[str, ...] | None


@dataclass(frozen=True)
class Seq:
    parts: tuple["Path", ...]


@dataclass(frozen=True)
class Alt:
    parts: tuple["Path", ...]


@dataclass(frozen=True)
class Repeat:
    """``p*`` (0, None), ``p+`` (1, None) and ``p?`` (0, 1)."""

    path: "Path"
    min: int
    max: int | None


Path = Union[Link, Negated, Seq, Alt, Repeat]


def inverse(path: Path) -> Path:
    """``^path`` with the inverse pushed down to the links and negated sets."""
    if isinstance(path, Link):
        return Link(path.iri, not path.inverse)
    if isinstance(path, Negated):
        return Negated(path.backward, path.forward)
    if isinstance(path, Seq):
        return Seq(tuple(inverse(p) for p in reversed(path.parts)))
    if isinstance(path, Alt):
        return Alt(tuple(inverse(p) for p in path.parts))
    return Repeat(inverse(path.path), path.min, path.max)


def path_text(path: Path) -> str:
    """A deterministic, fully parenthesised SPARQL spelling (part of a path view's canonical form)."""
    if isinstance(path, Link):
        return f"^{path.iri}" if path.inverse else path.iri
    if isinstance(path, Negated):
        items = [*(path.forward or ()), *(f"^{iri}" for iri in path.backward or ())]
        return "!(" + "|".join(items) + ")"
    if isinstance(path, (Seq, Alt)):
        sep = "/" if isinstance(path, Seq) else "|"
        return "(" + sep.join(path_text(p) for p in path.parts) + ")"
    suffix = {(0, None): "*", (1, None): "+", (0, 1): "?"}[(path.min, path.max)]
    return f"({path_text(path.path)}){suffix}"


def predicates(path: Path) -> tuple[str, ...]:
    """Every IRI the path names (links and negated sets), sorted."""
    def walk(p: Path) -> Iterator[str]:
        if isinstance(p, Link):
            yield p.iri
        elif isinstance(p, Negated):
            yield from (*(p.forward or ()), *(p.backward or ()))
        elif isinstance(p, (Seq, Alt)):
            for part in p.parts:
                yield from walk(part)
        else:
            yield from walk(p.path)
    return tuple(sorted(set(walk(path))))


@dataclass(frozen=True)
class PathPattern:
    """``s path o`` where ``path`` is kept by the path operator (a set of pairs)."""

    s: Node
    path: Path
    o: Node
    t: None = None           # no timestamp() of a path (a path is not one triple)

    @property
    def p(self) -> Path:
        """The middle position, as a triple pattern has it (never a constant term)."""
        return self.path

    def nodes(self) -> tuple[tuple[str, Node], ...]:
        return (("s", self.s), ("o", self.o))

    def variables(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(n.name for _, n in self.nodes() if isinstance(n, Var)))

    def text(self) -> str:
        ends = [f"?{n.name}" if isinstance(n, Var) else n for n in (self.s, self.o)]
        return f"{ends[0]} {path_text(self.path)} {ends[1]}"


Pattern = Union[TriplePattern, PathPattern]


def translate(s: Node, path: Path, o: Node, fresh: Iterator[str]) -> tuple[list[Pattern], list[Expr]]:
    """The patterns and FILTERs ``s path o`` stands for (see the module text); ``fresh`` names the
    variables sequences and negated sets introduce."""
    if isinstance(path, Link):
        return [TriplePattern(o, path.iri, s) if path.inverse else TriplePattern(s, path.iri, o)], []
    if isinstance(path, Seq):
        patterns: list[Pattern] = []
        filters: list[Expr] = []
        start = s
        for k, part in enumerate(path.parts):
            end = o if k == len(path.parts) - 1 else Var(next(fresh))
            more, where = translate(start, part, end, fresh)
            patterns += more
            filters += where
            start = end
        return patterns, filters
    if isinstance(path, Negated) and (path.forward is None) != (path.backward is None):
        excluded = path.forward if path.forward is not None else path.backward
        predicate = Var(next(fresh))
        pattern = TriplePattern(s, predicate, o) if path.forward is not None else TriplePattern(o, predicate, s)
        return [pattern], [Compare("!=", predicate, Const(iri)) for iri in excluded or ()]
    if isinstance(path, Alt) and len(path.parts) == 1:
        return translate(s, path.parts[0], o, fresh)
    return [PathPattern(s, path, o)], []
