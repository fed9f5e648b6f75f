#!/usr/bin/env python3
"""Summarises the jdk.ExecutionSample events of a JFR file: top frames by self time and by inclusive time.

usage: python3 benchmarks/jfr_top.py FILE.jfr [N] [THREAD_SUBSTRING]
(no dependencies: runs `jfr print --json` from the JDK)"""
import collections, json, subprocess, sys

path = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 25
thread = sys.argv[3] if len(sys.argv) > 3 else None
out = subprocess.run(["jfr", "print", "--json", "--stack-depth", "96", "--events", "jdk.ExecutionSample", path],
                     check=True, capture_output=True, text=True).stdout
events = json.loads(out)["recording"]["events"]
self_c, incl_c = collections.Counter(), collections.Counter()
total = 0
for e in events:
    v = e["values"]
    t = (v.get("sampledThread") or {}).get("javaName") or ""
    if thread and thread not in t:
        continue
    frames = (v.get("stackTrace") or {}).get("frames") or []
    names = [f["method"]["type"]["name"] + "." + f["method"]["name"] for f in frames]
    if not names:
        continue
    total += 1
    self_c[names[0]] += 1
    for m in set(names):
        incl_c[m] += 1
print(f"{total} samples" + (f" on threads matching '{thread}'" if thread else ""))
print("top self:")
for m, c in self_c.most_common(n):
    print(f"  {100.0 * c / total:5.1f}%  {m}")
print("top inclusive:")
for m, c in incl_c.most_common(n * 2):
    print(f"  {100.0 * c / total:5.1f}%  {m}")
