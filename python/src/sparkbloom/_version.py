"""sparkbloom's version: the file VERSION beside this module, which the build (dev/common.sh build_wheel) writes from
project/versions.properties and the wheel carries; "0+unknown" in a checkout where no wheel was built yet."""

from __future__ import annotations

from pathlib import Path

_FILE = Path(__file__).with_name("VERSION")

__version__ = _FILE.read_text(encoding="utf-8").strip() if _FILE.is_file() else "0+unknown"
