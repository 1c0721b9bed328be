"""What a soak (:mod:`bench.soak`) records, and its report: latency per time bucket with its trend,
state, files and disk over time, as ``soak.md``, ``soak.png`` and the raw ``soak.jsonl``.

Why batches are timed from the lake's own logs: the batch log has a planned and a done record per
batch and the ingest log the seq range of every file, so a batch's latency (oldest landing it
applies to its done record) needs no instrumentation inside lakegraph, and is what a consumer of
the answers sees.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from pipelines.storage import open_store

MB = 1 << 20
#: The parts of the lake that hold query state (the categories of :func:`bench.measure.category`).
STATE = ("views", "partial_embeddings", "gold")


@dataclass
class Soak:
    """A soak's settings and what it saw; times are seconds since ``started`` (epoch seconds)."""

    rate: int
    interval: float
    scale: int
    queries: list[str]
    maintain_minutes: float
    retention_hours: int
    triples: int
    started: float
    files: list[dict] = field(default_factory=list)
    samples: list[dict] = field(default_factory=list)
    batches: list[dict] = field(default_factory=list)

    def ingested(self, path: str, landed: float, seconds: float) -> None:
        """A landing file landed at ``landed`` (epoch) and took ``seconds`` to ingest."""
        self.files.append({"path": path, "t": landed - self.started, "ingest_s": seconds})

    def sample(self, command: str, seconds: float, sizes: dict, load: tuple[float, float, float]) -> None:
        """What the lake held after ``command`` (``run`` or ``maintain``) took ``seconds``."""
        part = lambda key: sum(sizes.get(c, {}).get(key, 0) for c in STATE)     # noqa: E731
        self.samples.append({
            "t": time.time() - self.started, "command": command, "seconds": seconds, "load": load[0],
            "state_rows": part("rows"), "state_files": part("files"),
            "bronze_rows": sizes.get("bronze", {}).get("rows", 0),
            "files": sum(s["files"] for s in sizes.values()),
            "max_files": max((s["max_files"] for s in sizes.values()), default=0),
            "disk_mb": round(sum(s["disk_bytes"] for s in sizes.values()) / MB, 1),
            "state_disk_mb": round(part("disk_bytes") / MB, 1),
            "state_log_mb": round(part("log_bytes") / MB, 1)})

    def read_logs(self, lake: Path) -> None:
        """Each batch that applied a soak file: messages, processing time and latency."""
        store = open_store(str(lake), backend="delta-rs")
        landed = {f["path"]: f["t"] for f in self.files}
        log = [r for r in store.read_arrow("ingest_log", columns=["path", "first_seq", "last_seq"]).to_pylist()
               if r["path"] in landed and r["last_seq"] is not None]
        records = store.read_arrow("batches").to_pylist()
        planned = {r["batch"]: r["logged_at"].timestamp() for r in records if r["status"] == "planned"}
        for r in sorted((r for r in records if r["status"] == "done"), key=lambda r: r["batch"]):
            files = [landed[f["path"]] for f in log if r["seq_from"] < f["last_seq"] <= r["seq_to"]]
            if not files:
                continue
            done = r["logged_at"].timestamp() - self.started
            self.batches.append({"batch": r["batch"], "t": done, "messages": r["seq_to"] - r["seq_from"],
                                 "files": len(files), "latency": done - min(files),
                                 "processing": done - (planned[r["batch"]] - self.started)})


def _percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def slope_per_minute(points: list[tuple[float, float]]) -> float:
    """The least-squares slope of ``(seconds, value)`` points, per minute."""
    if len(points) < 2:
        return float("nan")
    t, v = np.array(points).T
    return float(np.polyfit(t / 60, v, 1)[0])


def buckets(soak: Soak, minutes: float) -> list[dict]:
    """Per ``minutes`` of the soak: batches, messages, latency and processing p50/p99, ingests, load."""
    width, out = minutes * 60, []
    end = max([b["t"] for b in soak.batches] + [s["t"] for s in soak.samples] + [0.0])
    for k in range(int(end // width) + 1):
        inside = lambda t: k * width <= t < (k + 1) * width      # noqa: E731
        batches = [b for b in soak.batches if inside(b["t"])]
        ingests = [f["ingest_s"] for f in soak.files if inside(f["t"])]
        loads = [s["load"] for s in soak.samples if inside(s["t"])]
        latency, processing = [b["latency"] for b in batches], [b["processing"] for b in batches]
        out.append({"from": k * minutes, "to": (k + 1) * minutes, "batches": len(batches),
                    "messages": sum(b["messages"] for b in batches),
                    "latency_p50": _percentile(latency, 50), "latency_p99": _percentile(latency, 99),
                    "processing_p50": _percentile(processing, 50), "processing_p99": _percentile(processing, 99),
                    "ingests": len(ingests), "ingest_p50": _percentile(ingests, 50),
                    "load": float(np.mean(loads)) if loads else float("nan")})
    return out


def _range(soak: Soak, key: str) -> str:
    values = [s[key] for s in soak.samples]
    return f"{values[0]:,} | {min(values):,} | {max(values):,} | {values[-1]:,}" if values else "- | - | - | -"


def markdown(soak: Soak, table: list[dict], minutes: float) -> str:
    """The report's text."""
    rows = "\n".join(
        f"| {b['from']:g}–{b['to']:g} | {b['batches']} | {b['messages']:,} | {b['latency_p50']:.1f} | "
        f"{b['latency_p99']:.1f} | {b['processing_p50']:.2f} | {b['processing_p99']:.2f} | {b['ingests']} | "
        f"{b['ingest_p50']:.2f} | {b['load']:.1f} |" for b in table)
    latency = slope_per_minute([(b["t"], b["latency"]) for b in soak.batches])
    processing = slope_per_minute([(b["t"], b["processing"]) for b in soak.batches])
    state = slope_per_minute([(s["t"], s["state_rows"]) for s in soak.samples])
    p50 = _percentile([b["latency"] for b in soak.batches], 50)
    maintained = [s for s in soak.samples if s["command"] == "maintain"]
    messages = sum(b["messages"] for b in soak.batches)
    span = (soak.batches[-1]["t"] - soak.batches[0]["t"]) if len(soak.batches) > 1 else float("nan")
    loads = [s["load"] for s in soak.samples]
    return f"""# Soak

`python -m bench.soak --rate {soak.rate} --interval {soak.interval:g} --scale {soak.scale}` (queries
{", ".join(soak.queries)}; `maintain --retention-hours {soak.retention_hours} --force` every
{soak.maintain_minutes:g} minutes): a landing file of {soak.rate * soak.interval:,.0f} messages every
{soak.interval:g} s, ingested as it lands, `lakegraph run` back to back, all as processes. The LUBM
graph of {soak.triples:,} triples stays that size (deletes and re-inserts in equal parts). {len(soak.batches)}
batches applied {messages:,} messages in {span / 60:.1f} minutes ({messages / span if span else 0:,.0f}
messages/s). The machine has {os.cpu_count()} cores, shared with other jobs: load average (1 min)
{np.mean(loads) if loads else float("nan"):.1f} on average, {max(loads, default=float("nan")):.1f} at most.

Latency is from the landing of the oldest file a batch applies to the batch's done record
(seconds); processing is the batch alone (planned to done record; a `run` process adds its start-up,
about a second, on top). Per {minutes:g} minutes:

| minutes | batches | messages | latency p50 | latency p99 | processing p50 | processing p99 | ingests | ingest p50 | load |
|---|---|---|---|---|---|---|---|---|---|
{rows}

**Trend** (least squares over every batch): latency {latency:+.3f} s per minute (median
{p50:.1f} s), processing {processing:+.4f} s per minute.

**State and files** (after each command: first | min | max | last; {len(maintained)} maintenances, at
minutes {", ".join(f"{s['t'] / 60:.1f}" for s in maintained) or "-"}):

| | first | min | max | last |
|---|---|---|---|---|
| state rows (views, partial embeddings, gold) | {_range(soak, "state_rows")} |
| state data files | {_range(soak, "state_files")} |
| data files, whole lake | {_range(soak, "files")} |
| data files, largest table | {_range(soak, "max_files")} |
| bronze rows | {_range(soak, "bronze_rows")} |
| disk MB, state tables | {_range(soak, "state_disk_mb")} |
| of which Delta logs | {_range(soak, "state_log_mb")} |
| disk MB, whole lake | {_range(soak, "disk_mb")} |

State rows trend: {state:+.1f} rows per minute. Bronze, the log of every message, grows with the
stream by design, and with it the lake's disk use.

![latency, state and files over the soak](soak.png)
"""


def chart(soak: Soak, table: list[dict], path: Path) -> None:
    """Latency per batch with the buckets' p50/p99, state rows, data files and disk over time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (top, middle, bottom) = plt.subplots(3, 1, figsize=(10, 10), sharex=True)
    minutes = lambda rows: [r["t"] / 60 for r in rows]        # noqa: E731
    top.scatter(minutes(soak.batches), [b["latency"] for b in soak.batches], s=6, alpha=0.4, label="batch latency")
    top.scatter(minutes(soak.batches), [b["processing"] for b in soak.batches], s=6, alpha=0.4,
                label="batch processing")
    centres = [(b["from"] + b["to"]) / 2 for b in table]
    top.plot(centres, [b["latency_p50"] for b in table], "o-", label="latency p50")
    top.plot(centres, [b["latency_p99"] for b in table], "s--", label="latency p99")
    top.set_ylabel("seconds")
    top.set_title(f"lakegraph soak: {soak.rate} messages/s, LUBM scale {soak.scale}")
    top.legend(loc="upper left", fontsize="small")
    middle.plot(minutes(soak.samples), [s["state_rows"] for s in soak.samples], label="state rows")
    middle.set_ylabel("state rows")
    bronze = middle.twinx()
    bronze.plot(minutes(soak.samples), [s["bronze_rows"] for s in soak.samples], color="grey", label="bronze rows")
    bronze.set_ylabel("bronze rows")
    middle.legend(loc="upper left", fontsize="small")
    bronze.legend(loc="lower right", fontsize="small")
    bottom.plot(minutes(soak.samples), [s["files"] for s in soak.samples], label="data files (lake)")
    bottom.plot(minutes(soak.samples), [s["max_files"] for s in soak.samples], label="data files (largest table)")
    bottom.set_ylabel("files")
    disk = bottom.twinx()
    disk.plot(minutes(soak.samples), [s["disk_mb"] for s in soak.samples], color="grey", label="disk MB (lake)")
    disk.plot(minutes(soak.samples), [s["state_disk_mb"] for s in soak.samples], color="grey", linestyle="--",
              label="disk MB (state)")
    disk.set_ylabel("MB on disk")
    bottom.legend(loc="upper left", fontsize="small")
    disk.legend(loc="lower right", fontsize="small")
    bottom.set_xlabel("minutes")
    for axis in (top, middle, bottom):
        for s in soak.samples:
            if s["command"] == "maintain":
                axis.axvline(s["t"] / 60, color="black", linestyle=":", linewidth=0.8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def write_report(soak: Soak, out: Path, minutes: float) -> str:
    """Write ``soak.md``, ``soak.png`` and ``soak.jsonl`` under ``out``; returns the markdown."""
    out.mkdir(parents=True, exist_ok=True)
    table = buckets(soak, minutes)
    text = markdown(soak, table, minutes)
    (out / "soak.md").write_text(text)
    chart(soak, table, out / "soak.png")
    with (out / "soak.jsonl").open("w") as handle:
        handle.write(json.dumps({k: v for k, v in asdict(soak).items() if k not in ("files", "samples", "batches")})
                     + "\n")
        for kind, rows in (("file", soak.files), ("sample", soak.samples), ("batch", soak.batches)):
            for row in rows:
                handle.write(json.dumps({"kind": kind, **row}) + "\n")
    return text
