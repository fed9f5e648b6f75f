#!/usr/bin/env python3
"""A harvest against a scan of the same columns, as the table's files grow: the `BuildSpeed` harness
(benchmarks/harness/src/sparkbloom/bench/BuildSpeed.scala) once per file size, its medians collected into JSON and
plotted on log-log axes.

Each point is a table of `--files` one-row-group files of ROWS rows (a unique long `id`, a unique 36-character
string `u`) and a copy written with parquet-java's native bloom filters; the timed runs are a noop scan of `id, u`
over the plain copy and `CREATE BLOOM INDEX ... (id, u)` harvesting the copy's filters (medians of `--reps` after one
warm-up each). The harvest reads each file's footer and filters; the scan reads the two columns' pages.

Usage:
  .venv/bin/python benchmarks/harvest_sweep.py --files 200 --rows 2000,20000,200000,1000000 --reps 7 \\
      --out benchmarks/results/harvest-sweep.json --plot docs/img/harvest-sweep.png
  .venv/bin/python benchmarks/harvest_sweep.py --log SWEEP.log --out ... --plot ...   # from a saved run's output
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(files: int, rows: int, reps: int) -> str:
    cmd = ["dev/sbt", f"harness/runMain sparkbloom.bench.BuildSpeed files={files} rows={rows} cols=id,u "
                      f"reps={reps} only=scan,harvest"]
    load = os.getloadavg()[0]
    out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return f"rows={rows} load {load:.2f}\n" + "\n".join(f"rows={rows} {line}" for line in out.splitlines())


def parse(text: str) -> list[dict]:
    points: dict[int, dict] = {}
    for line in text.splitlines():
        m = re.match(r"rows=(\d+) (.*)", line)
        if not m:
            continue
        rows, rest = int(m.group(1)), m.group(2)
        p = points.setdefault(rows, {"rows_per_file": rows})
        if (t := re.search(r"table: (\d+) files x \d+ rows \(\S+, (\d+) MiB; \S+, (\d+) MiB\)", rest)):
            p["files"] = int(t.group(1))
            p["plain_mib"], p["native_mib"] = int(t.group(2)), int(t.group(3))
        elif (t := re.search(r"load\s+.*load average: ([\d.]+)", rest)) or (t := re.search(r"load ([\d.]+)$", rest)):
            p["load_before"] = float(t.group(1))
        elif (t := re.search(r"(scan|harvest)\s+runs ([\d, ]+) ms; median (\d+) ms", rest)):
            p[f"{t.group(1)}_runs_ms"] = [int(x) for x in t.group(2).split(", ")]
            p[f"{t.group(1)}_median_ms"] = int(t.group(3))
    out = []
    for rows in sorted(points):
        p = points[rows]
        if "scan_median_ms" in p and "harvest_median_ms" in p:
            p["mib_per_file"] = p["plain_mib"] / p["files"]
            p["harvest_over_scan"] = round(p["harvest_median_ms"] / p["scan_median_ms"], 3)
            out.append(p)
    return out


def plot(points: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [p["mib_per_file"] for p in points]
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    ax.plot(x, [p["scan_median_ms"] for p in points], marker="o", label="noop scan of the two columns")
    ax.plot(x, [p["harvest_median_ms"] for p in points], marker="o", label="harvesting CREATE BLOOM INDEX")
    ax.plot(x, [p["scan_median_ms"] / 10 for p in points], linestyle="--", color="grey", label="0.1 x the scan")
    for p, xi in zip(points, x):
        ax.annotate(f"{p['harvest_over_scan']:.2f}x", (xi, p["harvest_median_ms"]), textcoords="offset points",
                    xytext=(0, -14), ha="center", fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"MiB per file ({points[0]['files']} one-row-group files)")
    ax.set_ylabel("median time (ms)")
    ax.set_title("Harvest vs scan as files grow (local[2])")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--rows", default="2000,20000,200000,1000000")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--log", help="parse this saved output instead of running")
    ap.add_argument("--out", required=True)
    ap.add_argument("--plot")
    a = ap.parse_args()
    if a.log:
        with open(a.log) as f:
            text = f.read()
    else:
        text = "\n".join(run(a.files, int(r), a.reps) for r in a.rows.split(","))
    points = parse(text)
    if not points:
        print("no results parsed", file=sys.stderr)
        return 1
    with open(a.out, "w") as f:
        json.dump({"benchmark": "harvest_sweep", "date": datetime.date.today().isoformat(),
                   "machine": f"{os.cpu_count()} cores, local[2]", "points": points}, f, indent=1)
    for p in points:
        print(f"{p['files']} x {p['rows_per_file']} rows ({p['mib_per_file']:.2f} MiB/file): scan "
              f"{p['scan_median_ms']} ms, harvest {p['harvest_median_ms']} ms = {p['harvest_over_scan']}x")
    if a.plot:
        plot(points, a.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
