#!/usr/bin/env python3
"""The sizing model of docs/sizing.md, as numbers and a log-log plot (no Spark needed).

For a table of R row groups of n unique values each, it compares a fixed fpp per row group (0.01, the old
default) with the table-wide budget (false_reads_per_key = 0.1, the default) under the default ceiling of
32 bits per value and under spark.sparkbloom.maxBitsPerValue = 48:
bits per value and the expected false row groups per looked-up value (and for an IN of 100).
The FPP of an SBBF is Putze's Poisson model, as in scala-src/.../sbbf/Sizing.scala.

Usage: .venv/bin/python benchmarks/sizing_model.py [--png docs/img/sizing-model.png]
"""
import argparse
import math


def sbbf_fpp(values_per_block):
    """P(false positive) of an SBBF whose blocks hold Poisson(lambda) values each."""
    lam = values_per_block
    lo, hi = max(0, int(lam - 12 * math.sqrt(lam) - 20)), int(lam + 12 * math.sqrt(lam) + 40)
    return sum(math.exp(-lam + i * math.log(lam) - math.lgamma(i + 1)) * (1 - (31 / 32) ** i) ** 8
               for i in range(lo, hi + 1))


def bits_per_value(p):
    lo, hi = 1e-6, 256.0  # bisect on the load (values per 256-bit block)
    for _ in range(100):
        mid = (lo + hi) / 2
        if sbbf_fpp(mid) > p:
            hi = mid
        else:
            lo = mid
    return 256 / lo


def model(r, budget=0.1, fixed=0.01, k=100):
    rows = {}
    for name, p in (("fixed fpp 0.01", fixed), ("budget 0.1, ceiling 32", max(budget / r, sbbf_fpp(256 / 32))),
                    ("budget 0.1, ceiling 48", max(budget / r, sbbf_fpp(256 / 48)))):
        reads = r * p
        rows[name] = {"p": p, "bits_per_value": bits_per_value(p), "false_reads_per_key": reads,
                      "false_row_groups_in_k": r * (1 - (1 - p) ** k)}
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--png", help="write the log-log plot here")
    a = ap.parse_args()
    rs = [10 ** e for e in (2, 3, 4, 5, 6)] + [3000, 30000, 300000]
    rs.sort()
    print("| row groups R | policy | p per row group | bits/value | false reads per key | false row groups, IN-100 |")
    print("|---:|---|---:|---:|---:|---:|")
    series = {}
    for r in rs:
        for name, m in model(r).items():
            series.setdefault(name, []).append((r, m))
            print(f"| {r:,} | {name} | {m['p']:.3g} | {m['bits_per_value']:.1f} | {m['false_reads_per_key']:.3g} | "
                  f"{m['false_row_groups_in_k']:.3g} |")
    if a.png:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
        for name, pts in series.items():
            xs = [r for r, _ in pts]
            ax1.loglog(xs, [m["false_reads_per_key"] for _, m in pts], marker="o", label=name)
            ax2.semilogx(xs, [m["bits_per_value"] for _, m in pts], marker="o", label=name)
        ax1.set_xlabel("row groups R")
        ax1.set_ylabel("expected false row groups per key")
        ax1.set_title("False reads per looked-up value")
        ax2.set_xlabel("row groups R")
        ax2.set_ylabel("filter bits per distinct value")
        ax2.set_title("Index cost per value")
        for ax in (ax1, ax2):
            ax.grid(alpha=0.3, which="both")
            ax.legend()
        fig.tight_layout()
        fig.savefig(a.png, dpi=110)
        print("plot:", a.png)


if __name__ == "__main__":
    main()
