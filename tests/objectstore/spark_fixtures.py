"""The Spark fixture of the object-store suites (conftest.py imports it): one session for the run, whose S3A talks
to the S3 server through the session's proxy (conftest's `s3_proxy` resets the proxy's delays, faults and counters
before each test that asks for it)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pyspark.sql import SparkSession
from spark_s3 import s3_session


@pytest.fixture(scope="session")
def spark(s3_server: dict[str, Any], _s3_proxy_process: Any) -> Iterator[SparkSession]:
    session = s3_session(_s3_proxy_process.endpoint, s3_server["access_key"], s3_server["secret_key"],
                         warehouse="s3a://sparkbloom/warehouse",
                         # the tests count the requests of the statements they run: no background re-size of a
                         # harvested index after CREATE (its own test turns it on)
                         conf={"spark.sparkbloom.harvest.resizeInBackground": "false"})
    yield session
    session.stop()

