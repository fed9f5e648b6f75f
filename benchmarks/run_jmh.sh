#!/usr/bin/env bash
# Runs the SBBF micro benchmarks (JMH) and writes the JSON result that benchmarks/plot_jmh.py plots.
#
#   benchmarks/run_jmh.sh                      # the full run of docs/benchmarks.md (~20 min on 2 cores)
#   JMH_OPTS="-f 1 -wi 2 -i 3" benchmarks/run_jmh.sh 'SbbfBench.check.*' -p bytes=16384
#
# JMH_OPTS  forks, iterations and profilers (default: 2 forks, 3 warm-up iterations of 300 ms, 5 measured
#           of 400 ms, and the CPU-time profiler that reports how much of the wall time was really ours)
# JMH_OUT   the JSON result file (default: benchmarks/results/jmh.json)
# Further arguments go to JMH as they are: a benchmark regex, -p name=v1,v2, -prof gc, ...
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JMH_OPTS="${JMH_OPTS:--f 2 -wi 3 -w 300ms -i 5 -r 400ms -prof sparkbloom.bench.CpuTimeProfiler}"
JMH_OUT="${JMH_OUT:-$ROOT/benchmarks/results/jmh.json}"
mkdir -p "$(dirname "$JMH_OUT")"
# sbt takes the whole `Jmh/run ...` line as one command.
exec "$ROOT/dev/sbt" "bench/Jmh/run $JMH_OPTS -rf json -rff $(realpath -m "$JMH_OUT") $*"
