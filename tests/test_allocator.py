"""The allocator option the package sets (``pipelines/__init__.py``): in place before pyarrow loads,
in a fresh interpreter as a ``lakegraph`` process starts, and a user's own setting kept."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

# pyarrow imported after the package, as every entry point does: the option is in the process's
# environment by then, where mimalloc reads it at its first allocation
PROBE = "import os, pipelines, pyarrow; print(os.environ['MIMALLOC_PURGE_DECOMMITS'])"


@pytest.mark.parametrize("given, expected", [(None, "0"), ("1", "1")])
def test_the_package_sets_mimalloc_to_free_lazily_unless_told(given, expected):
    env = {k: v for k, v in os.environ.items() if k != "MIMALLOC_PURGE_DECOMMITS"}
    if given is not None:
        env["MIMALLOC_PURGE_DECOMMITS"] = given
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == expected
