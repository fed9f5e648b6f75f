"""dev/check-layers, the package-layer check CI runs: it passes on this checkout and fails on an upward import,
a same-layer import and a fully qualified cross-package name, each in a small source tree of its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CHECK = Path(__file__).resolve().parents[2] / "dev" / "check-layers"


def run(root: Path | None = None) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, str(CHECK)] + (["--root", str(root)] if root else [])
    return subprocess.run(args, capture_output=True, text=True, check=False)


def tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        f = tmp_path / "scala-src" / "main" / "scala" / "sparkbloom" / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    return tmp_path


def test_this_checkout_passes() -> None:
    r = run()
    assert r.returncode == 0, r.stderr
    assert "every use points down the layers" in r.stdout


def test_a_downward_import_passes(tmp_path: Path) -> None:
    r = run(tree(tmp_path, {
        "hash/H.scala": "package sparkbloom.hash\nobject H\n",
        "index/I.scala": "package sparkbloom.index\n\nimport sparkbloom.hash.H\n\nobject I { val h = H }\n",
    }))
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize(
    "files, expected",
    [
        ({"hash/H.scala": "package sparkbloom.hash\n\nimport sparkbloom.index.I\n\nobject H { val i = I }\n",
          "index/I.scala": "package sparkbloom.index\nobject I\n"},
         "hash (layer 0) uses index (layer 6)"),
        ({"sql/S.scala": "package sparkbloom.sql\n\nimport sparkbloom.functions.F\n\nobject S\n",
          "functions/F.scala": "package sparkbloom.functions\nobject F\n"},
         "sql (layer 13) uses functions (layer 13)"),
        ({"index/I.scala": "package sparkbloom.index\nobject I { def x = sparkbloom.hash.H }\n",
          "hash/H.scala": "package sparkbloom.hash\nobject H\n"},
         "sparkbloom.hash.H named fully qualified"),
        ({"BloomConf.scala": "package sparkbloom\nobject BloomConf { def x = index.I }\n",
          "index/I.scala": "package sparkbloom.index\nobject I\n"},
         "conf (layer 2) uses index (layer 6)"),
        ({"newpkg/N.scala": "package sparkbloom.newpkg\nobject N\n"}, "has no layer"),
    ],
)
def test_a_package_reaching_up_or_unlisted_fails(tmp_path: Path, files: dict[str, str], expected: str) -> None:
    r = run(tree(tmp_path, files))
    assert r.returncode == 1
    assert expected in r.stderr, r.stderr


def test_a_use_inside_a_comment_or_string_is_not_a_use(tmp_path: Path) -> None:
    r = run(tree(tmp_path, {
        "hash/H.scala": 'package sparkbloom.hash\n/** see [[sparkbloom.index.I]] */\n'
                        'object H { val k = "sparkbloom.index.x" }\n',
        "index/I.scala": "package sparkbloom.index\nobject I\n",
    }))
    assert r.returncode == 0, r.stderr
