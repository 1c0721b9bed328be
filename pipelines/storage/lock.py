"""The lake's locks: two processes never change the same state at once.

Delta's optimistic commits keep each table consistent by itself, but a micro-batch is many commits
over many tables planned from one snapshot: two ``run``s at once would plan the same batch twice,
and a ``maintain`` could vacuum a file another writer has written but not committed yet. So the
processes that change a lake hold one of two exclusive locks:

* the **writer lock** ``<lake>/_lake.lock``, for the whole of ``run``, ``register``, ``unregister``
  and ``maintain`` (held by the library functions themselves, so the CLI, the Airflow tasks and a
  notebook all take it);
* the **ingest lock** ``<lake>/_ingest.lock``, for each file an ingest commits (quarantine, bronze,
  ingest log, with ids and seqs handed out under it) and for the creation of the lake's fixed
  tables. ``maintain`` holds it too, for its whole run. ``ingest`` takes only this one: it only
  appends to bronze, which a batch reads through the change feed up to a version its plan records,
  so landing files can keep arriving while ``run`` works. A writer that needs both takes the writer
  lock first, so no two processes wait for each other.

Both are ``flock(2)`` locks: the kernel releases one when its process ends however it ends (SIGKILL,
the OOM killer, a pre-empted node's container), so a killed holder never leaves a stale lock behind,
and there is nothing to clean up by hand. The file's content (the holder's pid, command and start)
only names the holder in the error of a process that gave up waiting; the flock is the lock. Locks
are between processes: within one process the same lock may be taken again (nested calls), and
threads of one process share it. flock needs a local or NFSv4 filesystem; on an object store the
lake needs an external lock (an Airflow pool, docs/reliability.md).

Readers take no lock: every read is of a committed Delta version, and vacuum keeps removed files
for the retention (7 days by default), so a reader's snapshot stays readable while writers go on.
"""
from __future__ import annotations

import fcntl
import json
import os
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Iterator

from .base import StorageError

WRITER = "_lake.lock"
INGEST = "_ingest.lock"
#: How long a process waits for a lock another one holds, unless told (``--wait``).
WAIT_ENV = "LAKEGRAPH_WAIT"
DEFAULT_WAIT = 10.0
_POLL = 0.05

#: The locks this process holds: path -> (descriptor, depth of nesting).
_held: dict[str, tuple[int, int]] = {}


class LakeBusy(StorageError):
    """Another process held the lock for longer than this one would wait; the message names it."""


def parse_wait(text: str) -> float:
    """Seconds to wait for a lock: a non-negative number (``inf`` waits as long as it takes)."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise ValueError(f"the wait for the lake's lock must be a number of seconds >= 0, got {text!r}")
    return seconds


def default_wait() -> float:
    """``$LAKEGRAPH_WAIT`` seconds, else :data:`DEFAULT_WAIT`."""
    text = os.environ.get(WAIT_ENV)
    return DEFAULT_WAIT if text is None else parse_wait(text)


def _holder(fd: int) -> str:
    """Who holds the lock, as its holder wrote it."""
    try:
        info = json.loads(os.pread(fd, 4096, 0).decode())
        return f"lakegraph {info['command']} (pid {info['pid']}, since {info['since']})"
    except (OSError, ValueError, KeyError):
        return "another process"


def _acquire(fd: int, root: str, name: str, wait: float) -> None:
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                kind = "writer" if name == WRITER else "ingest"
                raise LakeBusy(f"the lake {root} is busy: {_holder(fd)} holds its {kind} lock; gave up after "
                               f"{wait:g} s (wait longer with --wait SECONDS or ${WAIT_ENV})") from None
            time.sleep(_POLL)


@contextmanager
def hold(root: str, name: str, command: str, wait: float | None = None) -> Iterator[None]:
    """Hold lock ``name`` (:data:`WRITER` or :data:`INGEST`) of the lake at ``root`` for
    ``command``, waiting at most ``wait`` seconds (None: :func:`default_wait`) for another process
    to release it, else :class:`LakeBusy`."""
    root = os.path.abspath(root)
    path = os.path.join(root, name)
    if path in _held:
        fd, depth = _held[path]
        _held[path] = (fd, depth + 1)
        try:
            yield
        finally:
            _held[path] = (fd, depth)
        return
    os.makedirs(root, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        _acquire(fd, root, name, default_wait() if wait is None else wait)
        since = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
        info = json.dumps({"pid": os.getpid(), "command": command, "since": since}).encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, info, 0)
        _held[path] = (fd, 1)
        try:
            yield
        finally:
            del _held[path]
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def writer(root: str, command: str, wait: float | None = None):
    """The writer lock of the lake at ``root`` (see the module text)."""
    return hold(root, WRITER, command, wait)


def ingesting(root: str, command: str, wait: float | None = None):
    """The ingest lock of the lake at ``root`` (see the module text)."""
    return hold(root, INGEST, command, wait)
