"""The ``lakegraph`` command line.

Every failure is one readable line on stderr (``lakegraph: error: ...``) and a non-zero exit;
``--debug`` shows the traceback and the JVM's own output instead. Each command imports only what it
uses and Spark starts only when a step needs it, so ``--help`` and the read commands are instant.

The commands live by family: :mod:`.write` (init, ingest, register, unregister, run), :mod:`.read`
(status, queries, explain, answers, changes), :mod:`.sql`, :mod:`.ops` (validate, maintain).
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Callable, NoReturn

from . import ops, read, sql, write
from .context import LAKE_ENV, CliError, Context, one_line

__all__ = ["CliError", "Context", "LAKE_ENV", "build_parser", "main"]


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors on one line (``lakegraph: error: ...``), exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see: {self.prog} --help)\n")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lakegraph")
    except PackageNotFoundError:   # running from a checkout that was never installed
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="lakegraph", description="Continuous SPARQL queries over a Delta lake of RDF updates.")
    parser.add_argument("--version", action="version", version=f"lakegraph {_version()}")
    parser.add_argument("--lake", metavar="DIR", help=f"lake directory (default: ${LAKE_ENV}, else ./lake)")
    parser.add_argument("--master", metavar="URL",
                        help="Spark master URL (default: $LAKEGRAPH_SPARK_MASTER, else local[*])")
    parser.add_argument("--conf", action="append", metavar="KEY=VALUE", help="a Spark setting; repeatable")
    parser.add_argument("--storage", choices=["auto", "delta-rs", "delta-spark"], default=None,
                        help="storage backend (default: $LAKEGRAPH_STORAGE, else auto: delta-rs unless a "
                             "started Spark session has the Delta jars)")
    parser.add_argument("--wait", metavar="SECONDS", help="how long a command that changes the lake waits for "
                        "another one's lock before it gives up (default: $LAKEGRAPH_WAIT, else 10; "
                        "docs/reliability.md)")
    parser.add_argument("--debug", action="store_true",
                        help="on an error show the traceback; show what the JVM prints (otherwise in "
                             "<lake>/_logs/spark.log)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars or progress lines")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                help="what to do (lakegraph COMMAND --help shows its options)")

    def add(name: str, func: Callable[[Context], None], help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(func=func)
        return p

    for family in (write, read, sql, ops):
        family.add_commands(add)
    return parser


def _report(exc: Exception) -> str:
    """The error line: the message alone for user errors, prefixed with the exception's type
    otherwise (so that a bug still says what it is)."""
    from ..storage import StorageError

    known = (CliError, ValueError, LookupError, OSError, StorageError)
    prefix = "" if isinstance(exc, known) else f"{type(exc).__name__}: "
    return f"lakegraph: error: {prefix}{one_line(exc)}"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    ctx = None
    try:
        ctx = Context(args)
        args.func(ctx)
    except KeyboardInterrupt:
        print("lakegraph: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader stopped reading (``lakegraph answers q | head``): nothing is wrong, and
        # nothing more can be said to it. Quiet, with the status a shell gives a command killed by
        # SIGPIPE (as git's and cat's); stdout goes to devnull so that the interpreter's last flush
        # does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except Exception as exc:  # one readable line; the traceback with --debug
        if args.debug:
            raise
        print(_report(exc), file=sys.stderr)
        return 1
    finally:
        if ctx is not None:
            ctx.close()
    return 0

