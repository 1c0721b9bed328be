"""Window arithmetic, engine-free: which windows a windowed query emits and what each one covers.

Every window kind is described in one currency, a *position* on its streams, so that one operator
(:mod:`pipelines.engine.windows`) slides them all:

* time windows and ``[NOW]``: the position of a message is its event time in milliseconds; window
  k closes at ``c_k = k * STEP`` (aligned to the Unix epoch) and covers ``[c - RANGE_i, c)`` on
  stream i. ``[NOW]`` is RANGE = STEP = 1 ms whose closes are the distinct event times + 1 ms (only
  windows holding messages exist);
* count windows: the position of an insert is its number on the stream (1, 2, ...); window k ends
  at insert ``e_k = n + (k - 1) * m`` and covers positions ``(e_k - n, e_k]``, i.e. close
  ``e_k + 1`` and extent ``[close - n, close)``, the same shape as a time window.

Between two consecutive emitted windows only the messages in the symmetric difference of their
extents can change a triple's presence (:meth:`Clock.slide`): the slide costs what enters and
leaves, not the window.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from .streams import StreamWindow

Interval = tuple[int, int]      # positions [lo, hi)


def bare(iri: str) -> str:
    """A plan's ``<iri>`` as bronze's ``stream`` column spells it (without angle brackets)."""
    return iri[1:-1] if iri.startswith("<") and iri.endswith(">") else iri


@dataclass(frozen=True)
class Clock:
    """The windows of one query: their kind, each stream's RANGE (in positions), the shared STEP
    and the allowed lateness (time and ``[NOW]`` windows; in milliseconds)."""

    kind: str                                   # 'time' | 'count' | 'now'
    ranges: tuple[tuple[str, int], ...]         # (stream IRI as bronze spells it, RANGE)
    step: int
    lateness_ms: int = 0

    @classmethod
    def of(cls, streams: Sequence[StreamWindow], lateness_ms: int = 0) -> "Clock | None":
        """The clock of a query's ``FROM STREAM`` windows; None without any."""
        if not streams:
            return None
        first = streams[0]
        if first.kind == "count":
            return cls("count", tuple((bare(w.stream), w.range_count) for w in streams), first.step_count, 0)
        return cls(first.kind, tuple((bare(w.stream), w.range_ms) for w in streams), first.step_ms, lateness_ms)

    @property
    def streams(self) -> tuple[str, ...]:
        return tuple(stream for stream, _ in self.ranges)

    @property
    def longest(self) -> int:
        return max(r for _, r in self.ranges)

    def extents(self, close: int) -> dict[str, Interval]:
        """What each stream contributes to the window closing at ``close``."""
        return {stream: (close - r, close) for stream, r in self.ranges}

    def slide(self, previous: int | None, close: int) -> dict[str, list[Interval]]:
        """Per stream, the positions whose messages may change a triple's presence between the
        window closing at ``previous`` (None: nothing emitted yet) and the one closing at ``close``:
        what leaves and what enters."""
        out: dict[str, list[Interval]] = {}
        for stream, (lo, hi) in self.extents(close).items():
            if previous is None:
                out[stream] = [(lo, hi)]
                continue
            plo, phi = self.extents(previous)[stream]
            out[stream] = [i for i in ((plo, min(phi, lo)), (max(phi, lo), hi)) if i[0] < i[1]]
        return out

    def late_below(self, max_time: int | None, last_close: int | None) -> int | None:
        """Event times below this are late (time and ``[NOW]`` windows): below the watermark after
        the previous batch, or inside a window already emitted (after ``--flush``)."""
        if self.kind == "count" or max_time is None:
            return None
        watermark = max_time - self.lateness_ms
        return watermark if last_close is None else max(watermark, last_close)

    def closes(self, last_close: int | None, first_position: int | None, limit: int,
               times: Iterable[int] = ()) -> list[int]:
        """The closes to emit after ``last_close`` up to ``limit`` (inclusive). Time windows start at
        the first close after ``first_position`` (the earliest event time); ``[NOW]`` windows are
        the distinct event ``times`` + 1; count windows need no start (positions begin at 1)."""
        if self.kind == "now":
            return sorted({t + 1 for t in times if (last_close is None or t + 1 > last_close) and t + 1 <= limit})
        if self.kind == "count":
            close = self.ranges[0][1] + 1 if last_close is None else last_close + self.step
        elif last_close is not None:
            close = last_close + self.step
        elif first_position is None:
            return []
        else:
            close = (first_position // self.step + 1) * self.step
        out = []
        while close <= limit:
            out.append(close)
            close += self.step
        return out

    def limit(self, max_time: int | None, inserts: int, flush: bool) -> int | None:
        """The last close a batch may emit: the watermark (time, ``[NOW]``), or, on ``--flush``,
        the close of the last window holding data; for count windows, the inserts seen + 1."""
        if self.kind == "count":
            return inserts + 1
        if max_time is None:
            return None
        if flush:
            return max_time + self.longest
        return max_time - self.lateness_ms
