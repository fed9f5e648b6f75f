"""The package as a user gets it: the wheel built from python/, installed with no network into a fresh
virtual environment, runs examples/quickstart.py.

The fresh environment sees only pyspark and py4j from the development environment (through a .pth file
naming a directory of links to exactly those two), so nothing else can leak in, and pip installs the
wheel with --no-index.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

import sparkbloom

from conftest import ROOT, run_python

# sparkbloom's version: project/versions.properties' `version`, the one place it is written.
VERSION = next(line.split("=", 1)[1].strip() for line in (ROOT / "project" / "versions.properties").read_text()
               .splitlines() if line.startswith("version="))


def sh(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    proc = subprocess.run(list(args), capture_output=True, text=True, env=env, cwd=cwd, timeout=900)
    assert proc.returncode == 0, f"{args} exited with {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def pyspark_only(farm: Path) -> Path:
    """A directory holding links to pyspark and py4j (packages and metadata) and nothing else."""
    farm.mkdir()
    for dist_name, package in (("pyspark", "pyspark"), ("py4j", "py4j")):
        dist = importlib.metadata.distribution(dist_name)
        info = Path(str(dist._path))  # type: ignore[attr-defined]
        top = Path(str(dist.locate_file(package)))
        (farm / top.name).symlink_to(top, target_is_directory=True)
        (farm / info.name).symlink_to(info, target_is_directory=True)
    return farm


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, str]]:
    tmp = tmp_path_factory.mktemp("package")
    jars = Path(sparkbloom.jar_paths()[0]).parent / "sparkbloom.jar"
    if not jars.is_file():
        pytest.fail(f"{jars} is missing: build it first (dev/test does, through dev/common.sh ensure_package)")

    # Build the wheel from a copy of python/, so that the test leaves no build output in the checkout.
    source = tmp / "python"
    ignore = shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__")
    shutil.copytree(ROOT / "python", source, ignore=ignore)
    # The version, as dev/common.sh build_wheel writes it: project/versions.properties'.
    (source / "src" / "sparkbloom" / "VERSION").write_text(VERSION + "\n")
    dist = tmp / "dist"
    sh(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist), str(source))
    [wheel] = dist.glob(f"sparkbloom-{VERSION}-*.whl")

    venv = tmp / "venv"
    sh(sys.executable, "-m", "venv", str(venv))
    python = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items()
           if k not in ("SPARK_HOME", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH", "VIRTUAL_ENV")
           and not k.startswith("PIP_")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PIP_NO_INDEX"] = "1"  # belt and braces: pip must not reach any index
    site = sh(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", env=env).strip()
    (Path(site) / "pyspark_from_dev_env.pth").write_text(str(pyspark_only(tmp / "pyspark-only")) + "\n")

    sh(python, "-m", "pip", "install", "-q", "--no-index", "--find-links", str(dist), f"sparkbloom=={VERSION}", env=env)
    return python, env


def test_the_wheel_installs_into_a_fresh_venv_with_no_network_and_carries_its_jars(
    fresh_venv: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    python, env = fresh_venv
    script = (
        "import sparkbloom, pyspark; print(sparkbloom.__file__); print('\\n'.join(sparkbloom.jar_paths()));"
        "print(pyspark.__version__)"
    )
    out = sh(python, "-c", script, env=env, cwd=tmp_path)
    lines = out.split()
    venv = str(Path(python).parent.parent)
    assert lines[0].startswith(venv)  # this environment's copy, not the checkout's or the dev venv's
    line = sparkbloom.session.line_for(*sparkbloom.session.spark_version())
    assert any(j.endswith(f"/spark-{line}/sparkbloom.jar") and j.startswith(venv) for j in lines[1:-1])
    assert lines[-1] == pyspark.__version__  # the dev environment's pyspark, linked in and left as it was
    assert (Path(lines[0]).parent / "py.typed").is_file()
    # It redistributes zero-allocation-hashing's jar, so it carries the licence and the notice.
    licences = sh(python, "-c", "import importlib.metadata as m; print(sorted(f.name for f in m.files('sparkbloom') "
                  "if f.parent.name == 'licenses'))", env=env, cwd=tmp_path)
    assert licences.strip() == "['LICENSE', 'NOTICE']"
    # Its version is project/versions.properties', in the wheel's metadata and in sparkbloom.__version__.
    versions = sh(python, "-c", "import importlib.metadata as m, sparkbloom; print(m.version('sparkbloom'), "
                  "sparkbloom.__version__)", env=env, cwd=tmp_path)
    assert versions.split() == [VERSION, VERSION]


def test_a_session_from_the_fresh_venv_loads_the_extension(
    fresh_venv: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    python, env = fresh_venv
    script = (
        "from pyspark.sql import SparkSession\n"
        "import sparkbloom\n"
        "b = SparkSession.builder.master('local[1]').config('spark.ui.enabled', 'false')\n"
        "spark = sparkbloom.configure(b).getOrCreate()\n"
        "print(spark.conf.get('spark.sql.extensions'))\n"
        "print(type(getattr(spark.sparkContext._jvm, 'sparkbloom.api.PythonApi')).__name__)\n"
        "spark.stop()\n"
    )
    out = sh(python, "-c", script, env=env, cwd=tmp_path)
    assert out.split()[-2:] == ["sparkbloom.SparkBloomExtensions", "JavaClass"]


def test_the_quickstart_runs_from_the_fresh_venv(fresh_venv: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    python, env = fresh_venv
    out = run_python(python, [str(ROOT / "examples" / "quickstart.py")], cwd=tmp_path, env=env)
    assert "user_id = 4242 -> [{'user_id': 4242" in out
    assert "of 20 files" in out
