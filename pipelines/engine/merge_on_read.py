"""Tables kept merge-on-read: a batch appends its signed change, a read sums each row's signed copies.

A Delta MERGE scans and rewrites its whole target (its rows are in every file a batch's keys hit),
so a state table MERGEd at every batch costs what the table holds, not what the batch changed.
A Z-set table need not be consolidated on disk: any number of signed rows for a key sum to its
multiplicity. So a batch appends its change, every read consolidates, and the table is rewritten
consolidated only when its rows would exceed :data:`FOLD` times its content: the rewrite's cost,
spread over the appends since the last one, stays a constant times theirs, and a read never holds
more than :data:`FOLD` times the content.

Windowed queries keep their views and partial embeddings this way (:mod:`.windowed`); gold tables
stay consolidated for SQL users.
"""
from __future__ import annotations

#: A merge-on-read table is rewritten consolidated once its rows would exceed this many times its content.
FOLD = 2
