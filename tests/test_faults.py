"""Real kills (:mod:`tests.faults`): the example lake's commands SIGKILLed at seeded random moments
and restarted end equal to an uninterrupted run, table by table and answer by answer."""
from __future__ import annotations

from .faults import differences, landing, run_clean, run_with_kills, script

#: Seeds of the CI sample; a seed that once found a bug joins them.
SEEDS = (14,)
KILLS = 24


def test_kills_during_ingest_register_run_and_maintain_lose_and_double_nothing(tmp_path):
    steps = script(landing(tmp_path))
    durations, start_up = run_clean(tmp_path / "reference", steps)
    for seed in SEEDS:
        trial = tmp_path / f"seed{seed}"
        kills = run_with_kills(trial, steps, durations, start_up, KILLS, seed)
        assert differences(tmp_path / "reference", trial) == [], f"seed {seed}: {kills}"
        assert kills.total >= 20, kills
        assert {"ingest", "register", "run"} <= set(kills.landed), kills
