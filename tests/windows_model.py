"""The window semantics of ``docs/windows.md``, written plainly and independently of the engine: which
windows a sequence of batches emits and the graph each window holds. The oracle tests evaluate the
query on that graph with pyoxigraph and compare with lakegraph's answers."""
from __future__ import annotations

from dataclasses import dataclass, field

Triple = tuple[str, str, str]


@dataclass(frozen=True)
class Message:
    seq: int            # ingest order (bronze's seq order)
    stream: str         # bare IRI
    time: int           # event time, epoch ms
    op: str             # '+' or '-'
    triple: Triple


@dataclass
class Window:
    number: int
    open_ms: int
    close_ms: int
    graph: frozenset[Triple]
    stamps: dict[Triple, int] = field(default_factory=dict)   # timestamp() of the stream triples


@dataclass
class Model:
    """One windowed query: ``kind`` 'time', 'now' or 'count'; ``ranges`` per stream (ms or inserts)."""

    kind: str
    ranges: dict[str, int]
    step: int = 1
    lateness: int = 0
    graphs: tuple[str, ...] = ()
    accepted: list[Message] = field(default_factory=list)
    background: list[Message] = field(default_factory=list)
    max_time: int | None = None
    min_time: int | None = None
    last_close: int | None = None
    late: int = 0
    emitted: int = 0

    def batch(self, messages: list[Message], flush: bool = False) -> list[Window]:
        """The windows this batch emits."""
        mine = [m for m in messages if m.stream in self.ranges]
        self.background += [m for m in messages if m.stream in self.graphs]
        if self.kind == "count":
            self.accepted += [m for m in mine if m.op == "+"]
            return self._count_windows()
        threshold = None
        if self.max_time is not None:
            threshold = self.max_time - self.lateness
            if self.last_close is not None:
                threshold = max(threshold, self.last_close)
        for m in mine:
            if threshold is not None and m.time < threshold:
                self.late += 1
                continue
            self.accepted.append(m)
            self.max_time = m.time if self.max_time is None else max(self.max_time, m.time)
            self.min_time = m.time if self.min_time is None else min(self.min_time, m.time)
        if self.max_time is None:
            return []
        longest = max(self.ranges.values())
        limit = self.max_time + longest if flush else self.max_time - self.lateness
        if self.kind == "now":
            closes = sorted({m.time + 1 for m in self.accepted
                             if (self.last_close is None or m.time + 1 > self.last_close) and m.time + 1 <= limit})
        else:
            c = self.last_close + self.step if self.last_close is not None else (self.min_time // self.step + 1) * self.step
            closes = []
            while c <= limit:
                closes.append(c)
                c += self.step
        out = []
        for c in closes:
            graph = set(self._background())
            stamps: dict[Triple, int] = {}
            for stream, r in self.ranges.items():
                last: dict[Triple, Message] = {}
                inserted: dict[Triple, int] = {}
                for m in sorted((m for m in self.accepted if m.stream == stream and c - r <= m.time < c),
                                key=lambda m: (m.time, m.seq)):
                    last[m.triple] = m
                    if m.op == "+":
                        inserted[m.triple] = m.time
                present = {t for t, m in last.items() if m.op == "+"}
                graph |= present
                for t in present:           # the latest insert in the extent of a stream holding it
                    stamps[t] = max(stamps.get(t, inserted[t]), inserted[t])
            self.emitted += 1
            out.append(Window(self.emitted, c - longest, c, frozenset(graph), stamps))
            self.last_close = c
        return out

    def _background(self) -> set[Triple]:
        last: dict[tuple[str, Triple], str] = {}
        for m in sorted(self.background, key=lambda m: m.seq):
            last[(m.stream, m.triple)] = m.op
        return {t for (_, t), op in last.items() if op == "+"}

    def _count_windows(self) -> list[Window]:
        (stream, n), = self.ranges.items()
        out = []
        while n + self.emitted * self.step <= len(self.accepted):
            end = n + self.emitted * self.step
            inserts = self.accepted[end - n:end]
            graph = frozenset({m.triple for m in inserts} | self._background())
            stamps: dict[Triple, int] = {}
            for m in inserts:
                stamps[m.triple] = max(stamps.get(m.triple, m.time), m.time)
            self.emitted += 1
            out.append(Window(self.emitted, inserts[0].time, inserts[-1].time + 1, graph, stamps))
        return out
