"""Progress of a long command on stderr: a live bar on a terminal, one plain line per step when
stderr is a file or a pipe (a log, CI, Airflow), nothing with ``-q``. stdout keeps only the result."""
from __future__ import annotations

import sys
from typing import TextIO


class Progress:
    """Steps of a command of unknown length (batches, files), with running totals."""

    def __init__(self, quiet: bool, desc: str, unit: str, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.bar = None
        if not quiet and self.stream.isatty():
            from tqdm import tqdm

            self.bar = tqdm(desc=desc, unit=unit, file=self.stream, dynamic_ncols=True)

    def step(self, line: str, **totals: int) -> None:
        """One step done: ``line`` describes it (plain output), ``totals`` are the bar's postfix."""
        if self.quiet:
            return
        if self.bar is not None:
            self.bar.set_postfix(totals, refresh=False)
            self.bar.update(1)
        else:
            print(line, file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
