"""Smoke test of the end-to-end benchmark (benchmarks/e2e.py): its --quick mode must run, answer identically under
plain Parquet, native bloom filters and sparkbloom, and read fewer files with the index for a point
lookup. Never asserts on time.

A check of the benchmark script rather than of sparkbloom (whose answers the other suites check), and a minute
long: it runs with ``SPARKBLOOM_BENCHMARK_TESTS=1`` (``SPARKBLOOM_MATRIX_FULL=1 dev/matrix`` sets it), not in CI,
whose 30 minutes it would otherwise push past on a slow day."""
import glob
import json
import os
import subprocess
import sys

import pytest

import sparkbloom

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "benchmarks", "e2e.py")
# The jars of the running Spark line, as the installed package carries them.
BUNDLE = os.path.dirname(sparkbloom.jar_paths()[0])

pytestmark = pytest.mark.skipif(os.environ.get("SPARKBLOOM_BENCHMARK_TESTS") != "1",
                                reason="benchmark script smoke: set SPARKBLOOM_BENCHMARK_TESTS=1")


@pytest.fixture(scope="module")
def quick_result(tmp_path_factory):
    if not glob.glob(os.path.join(BUNDLE, "sparkbloom.jar")):
        pytest.fail(f"{BUNDLE}/sparkbloom.jar is missing: install the package first (dev/test does)")
    tmp = tmp_path_factory.mktemp("e2e")
    out = tmp / "result.json"
    proc = subprocess.run(
        [sys.executable, SCRIPT, "--quick", "--out", str(out), "--img-dir", str(tmp / "img"),
         "--data-dir", str(tmp / "data"), "--jars-dir", BUNDLE],
        cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, (
        f"e2e.py --quick failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    )
    with open(out) as f:
        return json.load(f), tmp


def test_answers_identical(quick_result):
    result, _ = quick_result
    assert result["correct"] is True
    for name, v in result["variants"].items():
        assert v["mismatches"] == [], name
        for q, per in v["queries"].items():
            counts = {c: per[c]["rows_returned"] for c in ("plain", "native", "sparkbloom")}
            assert len(set(counts.values())) == 1, (name, q, counts)


def test_point_lookup_reads_fewer_files_with_the_index(quick_result):
    result, _ = quick_result
    v = result["variants"]["1rg"]
    for q in ("point_key", "point_uuid"):
        per = v["queries"][q]
        assert per["plain"]["rows_returned"] == 1
        assert per["sparkbloom"]["files_read"] < per["plain"]["files_read"], q
        assert per["sparkbloom"]["files_read"] < per["native"]["files_read"], q
    # Not == 0: at fpp 0.01 each indexed file is a false positive with probability ~1%.
    absent = v["queries"]["absent_key"]
    assert absent["plain"]["rows_returned"] == 0
    assert absent["sparkbloom"]["files_read"] < absent["plain"]["files_read"]


def test_outputs_written(quick_result):
    result, tmp = quick_result
    assert set(result["variants"]) == {"1rg", "8rg"}
    assert result["variants"]["8rg"]["layout"]["row_groups_per_file_max"] > 1
    assert result["variants"]["1rg"]["build"]["harvest_index"]["Filters Harvested"] not in (None, "0")
    assert sorted(os.listdir(tmp / "img")) == ["e2e-files-read.png", "e2e-latency.png"]
