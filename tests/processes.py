"""The real ``lakegraph`` command as a process: where it is and the environment it runs in (none
of the caller's ``LAKEGRAPH_``, ``PYSPARK_`` or ``SPARK_`` settings, the venv's ``bin`` first)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

BIN = Path(sys.executable).parent
LAKEGRAPH = str(BIN / "lakegraph")


def cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LAKEGRAPH_", "PYSPARK_", "SPARK_"))}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return {**env, **extra}
