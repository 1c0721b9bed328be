"""Raw records to ``results.md`` (markdown tables) and PNG plots.

Batch time means, per system: lakegraph's bronze-to-gold run (``Runner.run``) with ingest shown
apart in the end-to-end figure; for the recomputes (Spark, DuckDB) and pyoxigraph, applying the batch plus re-running
and diffing the query (a query's own time is the shared apply plus its evaluation; the group's is
the apply plus every evaluation). Updates per second are batch size over end-to-end time.
"""
from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Callable, Iterable

SYSTEMS = ("lakegraph", "recompute", "duckdb", "oxigraph")
LABELS = {"lakegraph": "lakegraph (incremental)", "recompute": "Spark full recompute",
          "duckdb": "DuckDB full recompute", "oxigraph": "pyoxigraph re-query"}


def quantile(values: list[float], q: float) -> float:
    """Linear-interpolated quantile (``q`` in [0, 1]) of a non-empty list."""
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def batch_times(records: Iterable[dict]) -> dict[tuple, dict[str, list[float]]]:
    """``(scale, batch_size, key, system) -> {"batch": [...], "e2e": [...], "jobs": [...], "commits": [...]}``
    where ``key`` is the group label or a query name (per-query times of the re-running systems)."""
    out: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        if r["kind"] != "batch":
            continue
        keys = [(r["group"], r["parts"].get("run", r["seconds"]), r["seconds"])]
        if r["system"] != "lakegraph" and r["group"] == "all":
            apply_s = r["parts"]["apply"]
            keys += [(q, apply_s + r["parts"][q], apply_s + r["parts"][q]) for q in r["queries"]]
        for key, batch_s, e2e_s in keys:
            entry = out[(r["scale"], r["batch_size"], key, r["system"])]
            entry["batch"].append(batch_s)
            entry["e2e"].append(e2e_s)
            entry["jobs"].append(r["jobs"])
            entry["commits"].append(r["commits"])
            for read in READS:
                if read in r["stats"]:
                    entry[read].append(r["stats"][read])
    return out


#: What lakegraph's batch read: rows and compressed bytes from parquet files, rows from memory.
READS = ("file_rows_read", "file_bytes_read", "memory_rows_read")


def _reads(entry: dict) -> str:
    """``rows from files / MiB / rows from memory`` (medians), ``·`` when not recorded."""
    if not entry.get(READS[0]):
        return "·"
    rows, size, memory = (_median(entry[k]) for k in READS)
    return f"{rows:,.0f} / {size / 2**20:.1f} MiB / {memory:,.0f}"


def _fmt(seconds: float | None) -> str:
    if seconds is None:
        return "·"
    return f"{seconds:.3f}" if seconds < 1 else f"{seconds:.2f}" if seconds < 100 else f"{seconds:.0f}"


def _bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _median(values: list[float] | None) -> float | None:
    return statistics.median(values) if values else None


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in rows]


def _groups(records: list[dict]) -> list[str]:
    """The keys lakegraph is timed under: ``all`` (queries together) or each query (``--separate``)."""
    config = next(r for r in records if r["kind"] == "config")
    return config["queries"] if config["separate"] else ["all"]


def _cell(entry: dict | None, kind: str = "batch") -> str:
    """``median / p95`` of a series, ``·`` when not measured."""
    return f"{_fmt(_median(entry[kind]))} / {_fmt(quantile(entry[kind], 0.95))}" if entry else "·"


def markdown(records: list[dict]) -> str:
    """The whole report: machine, batch times, floor, growth, state size, setup."""
    machine = next(r for r in records if r["kind"] == "machine")
    config = next(r for r in records if r["kind"] == "config")
    triples = {r["scale"]: r["triples"] for r in records if "triples" in r}
    times = batch_times(records)
    lines = [
        f"Machine: {machine['cores']} cores, {(machine['memory_bytes'] or 0) / 2**30:.0f} GiB, {machine['platform']}; "
        f"Python {machine['python']}, {machine['java']}; "
        + ", ".join(f"{k} {v}" for k, v in machine["versions"].items()) + f"; Spark master {machine['spark_master']}.",
        "",
        f"Data: LUBM-shaped, departments per university: {config['departments']}, seed {config['seed']}; "
        f"{config['warmup']} warm-up and {config['batches']} measured batch(es) per batch size, "
        f"delete ratio {config['delete_ratio']}; queries "
        + ("each in its own lake" if config["separate"] else "registered together in one lake") + ".",
        "",
        "### Batch time (seconds) and throughput",
        "",
    ]
    rows = []
    for scale in config["scales"]:
        for size in config["batch_sizes"]:
            for key in _groups(records):
                lg, rc, dk, ox = (times.get((scale, size, key, s)) for s in SYSTEMS)
                if not lg:
                    continue
                e2e = _median(lg["e2e"])
                rows.append([
                    str(scale), f"{triples[scale]:,}", str(size), key, _cell(lg), _fmt(e2e), f"{size / e2e:,.0f}",
                    _cell(rc), _cell(dk), _cell(ox), f"{_median(rc['batch']) / e2e:.2f}x" if rc else "·",
                    f"{_median(dk['batch']) / e2e:.2f}x" if dk else "·",
                    f"{_median(lg['jobs']):.0f} / " + (f"{_median(rc['jobs']):.0f}" if rc else "·"),
                    f"{_median(lg['commits']):.0f}", _reads(lg),
                ])
    lines += _table(["scale", "triples", "batch", "query", "lakegraph median / p95", "lakegraph end-to-end",
                     "updates/s", "recompute median / p95", "DuckDB median / p95", "pyoxigraph median / p95",
                     "recompute ÷ lakegraph", "DuckDB ÷ lakegraph", "Spark jobs (lakegraph / recompute)",
                     "Delta commits", "lakegraph read: rows from files / compressed / rows from memory"], rows)
    engines = sorted({e for r in records if r["kind"] == "batch" and r["system"] == "lakegraph"
                      for e in r["stats"].get("engines", [])})
    lines += ["", f"lakegraph: bronze-to-gold (`Runner.run`, engine {config.get('engine', 'auto')}: "
              f"{', '.join(engines) or '·'} ran); end-to-end adds ingest; updates/s is batch size over "
              "end-to-end time; Delta commits are those of bronze-to-gold; reads are the state rows the batch "
              "read from parquet files (and their compressed bytes) and those served from memory "
              "(the small tables the store read or wrote at the previous batch, and the rows the batch looked up "
              "in the views the run holds indexed, `pipelines/engine/held.py`, in this long-lived process; a "
              "`lakegraph run` process reads each table once from files, at its first batch). Every system's "
              "batch starts after the files the others wrote are synced and the JVM has collected its garbage "
              "(`bench.runner.settle`), so no system is timed for work another left running."]
    if not config["separate"]:
        lines += ["", "### Per query: the re-running systems (the queries share one lakegraph run)", ""]
        per_query = [[str(scale), str(size), q, *(_cell(times.get((scale, size, q, s))) for s in SYSTEMS[1:])]
                     for scale in config["scales"] for size in config["batch_sizes"] for q in config["queries"]
                     if (scale, size, q, "oxigraph") in times]
        lines += _table(["scale", "batch", "query", "recompute median / p95", "DuckDB median / p95",
                         "pyoxigraph median / p95"], per_query)
    lines += ["", "### Floor: a batch that touches no view", ""]
    floor_rows = []
    for (scale, group), entries in _grouped(records, "floor").items():
        run = [e["parts"]["run"] for e in entries]
        floor_rows.append([str(scale), group, str(entries[0]["batch_size"]), _fmt(_median(run)),
                           f"{_median([e['jobs'] for e in entries]):.0f}",
                           f"{_median([e['commits'] for e in entries]):.0f}"])
    lines += _table(["scale", "query", "batch", "bronze-to-gold median", "Spark jobs", "Delta commits"], floor_rows)
    lines += ["", "### Growth: batch time as the graph grows, at a fixed batch size", ""]
    lines += _growth(records, config, triples, times)
    lines += ["", "### State on disk (live files of the last version)", ""] + _state(records)
    lines += ["", "### Setup (seconds)", ""]
    setup_rows = [[str(r["scale"]), r["group"], r["system"], _fmt(r["load_s"]), _fmt(r["register_s"])]
                  for r in records if r["kind"] == "setup"]
    lines += _table(["scale", "query", "system", "load", "register"], setup_rows)
    return "\n".join(lines) + "\n"


def _grouped(records: list[dict], kind: str) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = defaultdict(list)
    for r in records:
        if r["kind"] == kind:
            out[(r["scale"], r["group"])].append(r)
    return out


def _growth(records: list[dict], config: dict, triples: dict[int, int], times: dict) -> list[str]:
    scales = sorted(config["scales"])
    if len(scales) < 2:
        return ["(one scale only: run with `--scales 1,10`)"]
    small, large = scales[0], scales[-1]
    rows = []
    for size in config["batch_sizes"]:
        for key in _groups(records):
            cells = []
            for system in SYSTEMS:
                a, b = times.get((small, size, key, system)), times.get((large, size, key, system))
                ma, mb = (_median(a["batch"]), _median(b["batch"])) if a and b else (None, None)
                cells.append(f"{_fmt(ma)} → {_fmt(mb)} ({mb / ma:.2f}x)" if ma else "·")
            rows.append([str(size), key, *cells])
    ratio = triples[large] / triples[small]
    head = f"Graph: {triples[small]:,} → {triples[large]:,} triples ({ratio:.1f}x); median batch seconds."
    return [head, ""] + _table(["batch", "query", *(LABELS[s] for s in SYSTEMS)], rows)


def _state(records: list[dict]) -> list[str]:
    rows = []
    for r in records:
        if r["kind"] != "state":
            continue
        sizes = r["sizes"]

        def cell(category: str) -> str:
            entry = sizes.get(category)
            return f"{_bytes(entry['live_bytes'])} ({entry['rows']:,} rows)" if entry else "0"

        state_rows = sum(sizes.get(c, {}).get("rows", 0) for c in ("views", "partial_embeddings", "gold"))
        state_disk = sum(sizes.get(c, {}).get("disk_bytes", 0) for c in ("views", "partial_embeddings", "gold"))
        rows.append([str(r["scale"]), r["group"], f"{r['final_triples']:,}", f"{r['matchable_triples']:,}",
                     cell("views"), cell("partial_embeddings"), cell("gold"), cell("changes"), cell("bronze"),
                     _bytes(state_disk), f"{state_rows / max(r['matchable_triples'], 1):.2f}"])
    return _table(["scale", "query", "graph triples", "matchable triples", "views", "partial embeddings", "gold",
                   "answer changes", "bronze", "views+pe+gold on disk (all versions)",
                   "state rows ÷ matchable"], rows)


COLOURS = {"lakegraph": "tab:blue", "recompute": "tab:red", "duckdb": "tab:orange", "oxigraph": "tab:green"}
STYLES = ("-", "--", ":", "-.")


def plots(records: list[dict], out: Path) -> list[Path]:
    """Batch time against graph size, and against batch size, for the three systems (all queries:
    the group's time, or the sum of the per-query times with ``--separate``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    config = next(r for r in records if r["kind"] == "config")
    triples = {r["scale"]: r["triples"] for r in records if "triples" in r}
    times = batch_times(records)
    groups = _groups(records)
    scales, sizes = sorted(config["scales"]), sorted(config["batch_sizes"])

    def total(scale: int, size: int, system: str) -> float | None:
        medians = [_median(times[(scale, size, g, system)]["batch"])
                   for g in groups if (scale, size, g, system) in times]
        return sum(medians) if medians and len(medians) == len(groups) else None

    def draw(name: str, title: str, xlabel: str, series: list[tuple[str, str, str, list[tuple[float, float | None]]]],
             extra=None) -> Path:
        fig, ax = plt.subplots(figsize=(7.5, 4.8))
        for system, style, label, points in series:
            shown = [(x, y) for x, y in points if y is not None]
            if shown:
                ax.plot(*zip(*shown), marker="o", color=COLOURS[system], linestyle=style, label=label)
        if extra:
            extra(ax)
        ax.set(xscale="log", yscale="log", xlabel=xlabel, ylabel="median batch time (s)", title=title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = out / name
        fig.savefig(path, dpi=120)
        plt.close(fig)
        return path

    floors = [(triples[r["scale"]], r["parts"]["run"]) for r in records if r["kind"] == "floor"]

    def floor_line(ax) -> None:
        if floors:
            by_scale = {x: _median([y for x2, y in floors if x2 == x]) for x, _ in floors}
            ax.plot(*zip(*sorted(by_scale.items())), color="grey", linestyle=":", marker="x",
                    label="lakegraph floor (batch touching no view)")

    by_graph = [(system, STYLES[i % len(STYLES)], f"{LABELS[system]}, batch {size}",
                 [(triples[sc], total(sc, size, system)) for sc in scales])
                for system in SYSTEMS for i, size in enumerate(sizes)]
    by_batch = [(system, STYLES[i % len(STYLES)], f"{LABELS[system]}, {triples[sc]:,} triples",
                 [(size, total(sc, size, system)) for size in sizes])
                for system in SYSTEMS for i, sc in enumerate(scales)]
    return [draw("batch_time_vs_graph_size.png", "Batch time against graph size (all queries)",
                 "graph size (triples)", by_graph, floor_line),
            draw("batch_time_vs_batch_size.png", "Batch time against batch size (all queries)",
                 "batch size (updates)", by_batch)]


def write_markdown(out: Path, name: str, text: str) -> Path:
    """Write a report ``name`` in ``out`` (made if missing); returns its path."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    path.write_text(text, encoding="utf-8")
    return path


def rebuild(write: Callable[[list[dict], Path], Path], argv: list[str]) -> None:
    """A report module's command line: ``write`` the report beside the raw records file ``argv[1]``."""
    source = Path(argv[1])
    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    print(write(rows, source.parent))


def write_report(records: list[dict], out: Path) -> list[Path]:
    """``results.md`` and the plots in ``out``; returns the paths written."""
    md = write_markdown(out, "results.md", "# lakegraph benchmark results\n\n" + markdown(records))
    return [md] + plots(records, out)
