"""The soak's short version (benchmarks/soak.py, issue 47 item 3; docs/soak.md): streaming appends, lookups, joins,
MERGEs, Delta's automatic and manual OPTIMIZE, OPTIMIZE BLOOM INDEX and both VACUUMs against one indexed Delta table
at once for under two minutes. Every lookup and join must equal sparkbloom off at the same table version, every kind
of operation must have run, lookups must have been pruned, and the driver's threads and file descriptors must not
have grown past a generous bound. Never asserts on time, nor on the heap (too short to tell; the 30-minute run's
figures are in docs/soak.md). About 2.5 minutes, in a process of its own (it needs Delta's jars)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from test_examples import clean_env, lakehouse_jars

from conftest import ROOT

# The driver's bounded thread pools (thread name, digits left out: soak.py's thread_groups) and their bounds.
BOUNDED_POOLS = {"block-manager-storage-async-thread-pool-#": 100, "block-manager-ask-thread-pool-#": 100,
                 "sparkbloom-harvest-io-#": 64, "sparkbloom-index-io-#": 16}
# Spark's cached pools, whose idle threads end after 60 s: by name prefix.
CACHED_POOLS = ("QueryStageCreator-", "ResultQueryStageExecution-", "shuffle-exchange-", "broadcast-exchange-",
                "Executor task launch worker", "subquery-", "dynamicpruning-")


def test_a_short_soak_answers_as_sparkbloom_off_and_leaks_no_threads_or_files(tmp_path: Path) -> None:
    jars = ",".join(str(j) for j in lakehouse_jars())
    out = tmp_path / "soak.json"
    # everything at once for 100 s; each of the four maintenance statements every 20 s on a thread of its own
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "soak.py"), "--jars", jars, "--minutes",
                           str(100 / 60), "--maintenance-seconds", "20", "--merge-seconds", "5", "--json", str(out)],
                          cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        # the failures soak.py recorded (each starts with where, the exception's class and message), which the tail
        # of its output (Java stack frames) leaves out
        failures = json.loads(out.read_text())["failures"] if out.is_file() else []
        shown = "\n---\n".join(f[:2500] for f in failures[:3])
        raise AssertionError(f"soak.py exited with {proc.returncode}; {len(failures)} failures:\n{shown}\n"
                             f"--- the end of its output ---\n{(proc.stdout + proc.stderr)[-2500:]}")
    r = json.loads(out.read_text())
    c = r["counts"]
    assert r["wrong"] == 0 and not r["failures"] and r["stream_active_at_end"], r
    for kind in ("lookups", "joins", "optimize_manual", "optimize_bloom_index", "vacuum", "vacuum_bloom_index"):
        assert c.get(kind, 0) >= 1, (kind, c)
    # a MERGE ran: committed, or lost to the stream's appends (Delta's ConcurrentAppendException, retried until the
    # deadline); on a loaded machine every attempt of the short run can lose
    assert c.get("merges", 0) + c.get("merge_conflicts_retried", 0) >= 1, c
    # at least two micro-batches: each waits for the previous one's index refresh, slow on a loaded machine
    assert c["batches_appended"] >= 2, c
    history = r["delta_history"]
    assert history.get("STREAMING UPDATE", 0) >= 2, history
    assert history.get("OPTIMIZE (auto)", 0) >= 1, f"Delta's auto compaction did not run: {history}"
    # the comparisons were over pruned scans: the index left files out
    assert c.get("lookups_pruned", 0) >= c["lookups"] // 2 and c.get("lookups_files_skipped", 0) > 0, c
    # Threads, by name (digits left out): the bounded pools stay within their bounds (Spark's 100 + 100 block-manager
    # threads, sparkbloom's 64 + 16 I/O threads); Spark's cached pools (query stages, exchanges, task launch workers)
    # start lazily and idle out after 60 s, so a 100 s run can end with hundreds of them (a run here ended with 481
    # threads against 271 at the start): they are left out; every other thread may grow by a generous 100.
    start, end = r["thread_groups_start"], r["thread_groups_end"]
    for group, bound in BOUNDED_POOLS.items():
        assert end.get(group, 0) <= bound, (group, end)

    def others(groups: dict[str, int]) -> int:
        return sum(n for g, n in groups.items() if g not in BOUNDED_POOLS and not g.startswith(CACHED_POOLS))
    assert others(end) <= others(start) + 100, (r["threads_start_end"], start, end)
    f0, f1 = r["fds_start_end"]
    assert f1 <= f0 + 200, r["fds_start_end"]
