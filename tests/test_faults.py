"""Real kills (:mod:`tests.faults`): the example lake's commands SIGKILLed at seeded random moments
and restarted end equal to an uninterrupted run, table by table and answer by answer."""
from __future__ import annotations

from collections import Counter

from .faults import differences, landing, run_clean, run_with_kills, script

#: Seeds of the CI sample, run in order until the kills that landed make the sample: a kill drawn
#: for after its process has ended lands on none, and how many do so moves with the machine's load.
#: A seed that once found a bug joins them.
SEEDS = (14, 15, 16)
KILLS = 24
#: The sample: at least this many kills landed, across at least these commands (an ingest's or a
#: maintain's work after its start-up is short, so whether a kill falls inside it is chance:
#: ``python -m bench.faults`` lands hundreds, of every command).
LANDED, COMMANDS = 20, {"register", "run"}


def test_kills_during_ingest_register_run_and_maintain_lose_and_double_nothing(tmp_path):
    steps = script(landing(tmp_path))
    durations, start_up = run_clean(tmp_path / "reference", steps)
    landed: Counter[str] = Counter()
    for seed in SEEDS:
        trial = tmp_path / f"seed{seed}"
        kills = run_with_kills(trial, steps, durations, start_up, KILLS, seed)
        assert differences(tmp_path / "reference", trial) == [], f"seed {seed}: {kills}"
        landed.update(kills.landed)
        if landed.total() >= LANDED and COMMANDS <= set(landed):
            break
    assert landed.total() >= LANDED and COMMANDS <= set(landed), landed
