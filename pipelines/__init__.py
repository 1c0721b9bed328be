"""lakegraph's jobs: the engine, the storage, the command line and the operations around them.

Importing the package tunes Arrow's allocator, which must happen before pyarrow is first loaded
(mimalloc reads its options from the environment once, when the process first allocates through
it; the package's own modules and every entry point, ``lakegraph`` and ``python -m bench``, import
this first). mimalloc gives the pages freed since its last use back to the system 10 ms after
their release, so every batch faulted its working set in again: 20,000-30,000 page faults and
0.15-0.25 s of system time in a 10,000-edge batch of the paths bench (1.6-1.9 CPU s). With
``MIMALLOC_PURGE_DECOMMITS=0`` it gives them back by ``MADV_FREE`` instead: the kernel takes them
when it needs the memory, and until then they are reused without a fault (about 5,000 a batch,
0.14-0.15 s of system time). A value set in the environment wins.
"""
import os

os.environ.setdefault("MIMALLOC_PURGE_DECOMMITS", "0")
