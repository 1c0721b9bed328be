"""A streaming social graph in the shape of the LDBC SNB update stream the streaming RPQ paper used:
persons who ``knows`` each other, posts and comments with ``hasCreator``, comments ``replyOf`` a
post or comment, persons who ``likes`` messages; deterministic for a seed.

Why our own generator: LDBC's Datagen is a Hadoop/Spark job and a download that cannot be fetched
here; the paths benchmark needs only the four labels, their proportions and their skew.

* **Power-law degrees** by preferential attachment: a message's creator, the message a comment
  answers, the message a person likes and the member a new person knows are drawn with weight
  one plus the degree they already have, so a few persons and threads collect most edges.
* **Communities**: ``knows`` stays within communities of at most :data:`COMMUNITY` persons (as
  LDBC correlates friendships by university and interests). Every path query of the benchmark
  roots at every node, as the paper's do, and the closure of ``knows*`` over one connected
  population would grow with the square of the persons; the paper bounds it with 10-day windows,
  here communities bound it, so the state grows linearly with the graph and the 1M-edge run fits.
  ``knows`` edges are directed; half are made mutual, so communities are full of cycles.
* Reply threads are trees (a comment answers an earlier message), so ``replyOf*`` has no cycles
  but long chains under popular threads.

The stream continues the same process. Deletions (``delete_ratio`` of a batch) remove edges drawn
uniformly from the graph as it stands, as the paper does ("a previously consumed edge as a
negative tuple"); a deleted edge may come back later, as any new edge.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

SNB = "http://lakegraph.example/snb/"
LABELS = ("knows", "likes", "replyOf", "hasCreator")
#: Persons per community (the bound of a ``knows*`` tree).
COMMUNITY = 30
#: Relative weights of the generator's actions; with the edges each adds, the edge mix is about
#: 10% knows, 31% hasCreator, 22% replyOf and 37% likes.
ACTIONS = (("person", 3), ("knows", 5), ("post", 12), ("comment", 30), ("like", 50))

Triple = tuple[str, str, str]
Update = tuple[str, Triple]


def snb(name: str) -> str:
    """An IRI of the benchmark's vocabulary in N-Triples syntax."""
    return f"<{SNB}{name}>"


PREDICATE = {label: snb(label) for label in LABELS}


class _Weighted:
    """Items drawn by preferential attachment: half the draws uniformly over the items, half with
    weight proportional to the credits an item has had (a list with the item once per credit),
    which gives a power-law tail without letting the first items take nearly every edge."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.tickets: list[str] = []

    def add(self, item: str) -> None:
        self.items.append(item)
        self.tickets.append(item)

    def credit(self, item: str) -> None:
        self.tickets.append(item)

    def draw(self, rng: random.Random) -> str:
        pool = self.items if rng.random() < 0.5 else self.tickets
        return pool[rng.randrange(len(pool))]


@dataclass
class SocialGraph:
    """The graph as it stands (a set, with a list for uniform draws) and the generator's state."""

    seed: int
    rng: random.Random = field(init=False)
    edges: list[Triple] = field(default_factory=list)
    index: dict[Triple, int] = field(default_factory=dict)
    persons: int = 0
    messages: int = 0
    communities: list[_Weighted] = field(default_factory=list)
    creators: _Weighted = field(default_factory=_Weighted)
    threads: _Weighted = field(default_factory=_Weighted)
    community_of: dict[str, int] = field(default_factory=dict)
    pending: list[Update] = field(default_factory=list)     # generated, in the graph, not yet emitted

    def __post_init__(self) -> None:
        self.rng = random.Random(f"snb:{self.seed}")
        self._person()

    def __len__(self) -> int:
        return len(self.edges)

    # -- the graph as a set with uniform draws ------------------------------------------------------
    def _add(self, triple: Triple, out: list[Update]) -> None:
        if triple not in self.index:
            self.index[triple] = len(self.edges)
            self.edges.append(triple)
            out.append(("+", triple))

    def _remove(self, out: list[Update]) -> None:
        k = self.rng.randrange(len(self.edges))
        triple, last = self.edges[k], self.edges[-1]
        self.edges[k] = last
        self.index[last] = k
        self.edges.pop()
        del self.index[triple]
        out.append(("-", triple))

    # -- the actions ----------------------------------------------------------------------------------
    def _person(self, out: list[Update] | None = None) -> None:
        person = snb(f"person{self.persons}")
        if self.persons % COMMUNITY == 0:
            self.communities.append(_Weighted())
        self.persons += 1
        community = self.communities[-1]
        self.community_of[person] = len(self.communities) - 1
        if out is not None and community.items:
            for _ in range(self.rng.randint(1, 3)):
                self._knows(person, community.draw(self.rng), out)
        community.add(person)
        self.creators.add(person)

    def _knows(self, a: str, b: str, out: list[Update]) -> None:
        if a == b:
            return
        self._add((a, PREDICATE["knows"], b), out)
        if self.rng.random() < 0.5:
            self._add((b, PREDICATE["knows"], a), out)
        community = self.communities[self.community_of[a]]
        community.credit(a)
        community.credit(b)

    def _message(self, kind: str, out: list[Update]) -> str:
        message = snb(f"{kind}{self.messages}")
        self.messages += 1
        creator = self.creators.draw(self.rng)
        self.creators.credit(creator)
        self._add((message, PREDICATE["hasCreator"], creator), out)
        self.threads.add(message)
        return message

    def _step(self, out: list[Update]) -> None:
        total = sum(w for _, w in ACTIONS)
        pick = self.rng.randrange(total)
        action = next(a for a, w in _cumulative(ACTIONS) if pick < w)
        if action == "person":
            self._person(out)
        elif action == "knows":
            a = self.creators.draw(self.rng)
            community = self.communities[self.community_of[a]]
            self._knows(a, community.draw(self.rng), out)
        elif action == "post" or not self.threads.items:
            self._message("post", out)
        elif action == "comment":
            parent = self.threads.draw(self.rng)
            comment = self._message("comment", out)
            self._add((comment, PREDICATE["replyOf"], parent), out)
            self.threads.credit(parent)
        else:
            message = self.threads.draw(self.rng)
            self._add((self.creators.draw(self.rng), PREDICATE["likes"], message), out)
            self.threads.credit(message)

    # -- the public stream ----------------------------------------------------------------------------
    def grow(self, edges: int) -> list[Triple]:
        """The first ``edges`` edges (the initial graph)."""
        out: list[Update] = []
        while len(self.edges) < edges:
            self._step(out)
        return list(self.edges)

    def next_batch(self, size: int, delete_ratio: float) -> list[Update]:
        """``size`` updates: ``delete_ratio`` of them deletions of existing edges, spread over the
        batch, the rest new edges; every update changes the graph. An action that adds several
        edges may end past ``size``: its last edges open the next batch."""
        out, self.pending = self.pending, []
        deletes = min(round(size * delete_ratio), size - len(out))
        due = sorted(self.rng.sample(range(len(out), size), deletes)) if deletes else []
        while len(out) < size:
            if due and len(out) >= due[0]:
                due.pop(0)
                self._remove(out)
            else:
                self._step(out)
        out, self.pending = out[:size], out[size:]
        return out


def _cumulative(weights: tuple[tuple[str, int], ...]) -> list[tuple[str, int]]:
    total, out = 0, []
    for name, weight in weights:
        total += weight
        out.append((name, total))
    return out
