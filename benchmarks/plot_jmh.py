#!/usr/bin/env python3
"""Turns the JMH JSON result of benchmarks/run_jmh.sh into plots and the tables of docs/benchmarks.md.

    python benchmarks/plot_jmh.py                                   # reads benchmarks/results/jmh.json
    python benchmarks/plot_jmh.py a.json b.json --out docs/img --table   # b's entries replace a's

Writes, per metric (``wall``: JMH's score; ``cpu``: the same scaled by the share of wall time the benchmark
thread was on a CPU, from ``-prof sparkbloom.bench.CpuTimeProfiler``):

    <out>/jmh_<metric>.png   ns/op against filter size, ours (vector, scalar) against parquet-java

and with ``--table`` prints Markdown tables (ns/op with JMH's 99.9% error, and parquet-java / ours).
Needs matplotlib only.
"""
import argparse
import json
import os
from collections import defaultdict

IMPLS = ("vector", "scalar", "parquet")
COLORS = {"vector": "#1f77b4", "scalar": "#2ca02c", "parquet": "#d62728"}
LABELS = {"vector": "sparkbloom, Vector API", "scalar": "sparkbloom, scalar", "parquet": "parquet-java"}
SIZES = {"16384": "16 KiB", "524288": "512 KiB", "134217728": "128 MiB"}
# Benchmarks drawn against filter size, with the floor measurements (FloorBench, 128 MiB) drawn at 128 MiB:
# one random cache line, and the same memory pattern as the operation done with scalar loads/stores.
PANELS = [
    ("SbbfBench.insert", None, "insert (pre-hashed)", ("independentLoad", "independentBlockRmw")),
    ("SbbfBench.checkHits", None, "check: hits", ("independentLoad", "independentBlockLoad")),
    ("SbbfBench.checkMisses", None, "check: misses", ("independentLoad", "independentBlockLoad")),
    ("SbbfBench.checkMixed", None, "check: 50/50 mix", ("independentLoad", "independentBlockLoad")),
    ("HashInsertBench.hashInsertLong", None, "hash + insert: long", ()),
    ("HashInsertBench.hashInsertString", "8", "hash + insert: 8-byte string", ()),
    ("HashInsertBench.hashInsertString", "16", "hash + insert: 16-byte string", ()),
    ("HashInsertBench.hashInsertString", "32", "hash + insert: 32-byte string", ()),
]
FLOOR_STYLES = ("dashed", "dotted")


def load(paths):
    """{(benchmark, len, bytes, impl): {"wall": (score, err), "cpu": (score, err) or None}}; later files win."""
    out = {}
    for r in (r for path in paths for r in json.load(open(path))):
        name = r["benchmark"].split(".bench.", 1)[-1]
        p = r.get("params", {})
        key = (name, p.get("len"), p.get("bytes"), p.get("impl"))
        pm = r["primaryMetric"]
        cpu = r.get("secondaryMetrics", {}).get("cpu.time")
        out[key] = {"wall": metric(pm), "cpu": metric(cpu) if cpu else None}
    return out


def metric(m):
    """(score, error); JMH writes the error as "NaN" when there is a single iteration."""
    err = float(m["scoreError"])
    return float(m["score"]), 0.0 if err != err else err


def value(res, key, metric):
    v = res.get(key, {}).get(metric)
    return v if v and v[0] == v[0] else None  # drop NaN


def floor(res, name, metric):
    return value(res, ("FloorBench." + name, None, None, None), metric)


def plot(res, metric, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 3, figsize=(15, 12))
    for ax, (bench, ln, title, floor_names) in zip(axes.flat, PANELS):
        sizes = sorted({k[2] for k in res if k[0] == bench and k[1] == ln}, key=int)
        if not sizes:
            ax.set_title(title + " (not measured)")
            ax.set_axis_off()
            continue
        xs = range(len(sizes))
        for impl in IMPLS:
            pts = [(x, value(res, (bench, ln, s, impl), metric)) for x, s in zip(xs, sizes)]
            pts = [(x, v) for x, v in pts if v]
            if pts:
                ax.errorbar([x for x, _ in pts], [v[0] for _, v in pts], yerr=[v[1] for _, v in pts],
                            marker="o", capsize=3, color=COLORS[impl], label=LABELS[impl])
        for floor_name, style in zip(floor_names, FLOOR_STYLES):
            fl = floor(res, floor_name, metric)
            if fl and "134217728" in sizes:
                x = sizes.index("134217728")
                ax.hlines(fl[0], x - 0.3, x + 0.3, colors="k", linestyles=style, label=f"floor: {floor_name}")
        ax.set_xticks(list(xs))
        ax.set_xticklabels([SIZES.get(s, s) for s in sizes])
        ax.set_yscale("log")
        ax.set_title(title)
        ax.set_xlabel("filter size")
        ax.set_ylabel("ns per value" + (" (CPU time)" if metric == "cpu" else ""))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)

    ax = axes.flat[len(PANELS)]
    bars = [(impl, value(res, ("InListBench.inList100x1000", None, None, impl), metric)) for impl in IMPLS]
    bars = [(i, v) for i, v in bars if v]
    ax.bar([LABELS[i] for i, _ in bars], [v[0] / 1e6 for _, v in bars], yerr=[v[1] / 1e6 for _, v in bars],
           color=[COLORS[i] for i, _ in bars], capsize=4)
    ax.set_title("IN-list: 100 values × 1,000 filters of 128 KiB")
    ax.set_ylabel("ms per IN-list" + (" (CPU time)" if metric == "cpu" else ""))
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(True, axis="y", alpha=0.3)

    what = "CPU time of the benchmark thread" if metric == "cpu" else "wall time (JMH score)"
    fig.suptitle(f"sparkbloom SBBF vs parquet-java BlockSplitBloomFilter: ns/op, {what}; lower is better")
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def fmt(v):
    if not v:
        return "n/a"
    s, e = v
    return f"{s:,.0f} ± {e:,.0f}" if s >= 1000 else f"{s:.2f} ± {e:.2f}"


def ratio(theirs, ours):
    return f"**{theirs[0] / ours[0]:.1f}×**" if theirs and ours else "n/a"


def table(res, metric):
    rows = ["| benchmark | size | vector ns/op | scalar ns/op | parquet-java ns/op | parquet ÷ vector | parquet ÷ scalar |",
            "|---|---|---:|---:|---:|---:|---:|"]
    groups = defaultdict(list)
    for (bench, ln, size, impl) in res:
        if impl:
            groups[(bench, ln, size)].append(impl)
    for (bench, ln, size) in sorted(groups, key=lambda k: (k[0], int(k[1] or 0), int(k[2] or 0))):
        v, s, p = (value(res, (bench, ln, size, i), metric) for i in IMPLS)
        name = bench.split(".")[-1] + (f" (len {ln})" if ln else "")
        rows.append(f"| {name} | {SIZES.get(size, size or '1,000 × 128 KiB')} | {fmt(v)} | {fmt(s)} | {fmt(p)} "
                    f"| {ratio(p, v)} | {ratio(p, s)} |")
    rows += ["", "| floor (128 MiB int array) | ns/access |", "|---|---:|"]
    for (bench, _, _, impl) in sorted(res):
        if bench.startswith("FloorBench."):
            rows.append(f"| {bench.split('.')[-1]} | {fmt(value(res, (bench, None, None, None), metric))} |")
    return "\n".join(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("json", nargs="*", default=[os.path.join(root, "benchmarks", "results", "jmh.json")],
                    help="JMH JSON results; a benchmark in a later file replaces the same one in an earlier file")
    ap.add_argument("--out", default=os.path.join(root, "docs", "img"), help="folder for the PNGs")
    ap.add_argument("--table", action="store_true", help="print the Markdown tables")
    args = ap.parse_args()
    res = load(args.json)
    metrics = ["wall"] + (["cpu"] if any(v["cpu"] for v in res.values()) else [])
    for m in metrics:
        path = os.path.join(args.out, f"jmh_{m}.png")
        plot(res, m, path)
        print(f"wrote {path}")
        if args.table:
            print(f"\n### {m}\n\n{table(res, m)}\n")


if __name__ == "__main__":
    main()
