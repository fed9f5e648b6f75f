"""The object-store test bed itself: MinIO's conditional writes (what a commit protocol on S3 relies on), and the proxy
(s3proxy.py): byte-exact pass-through, request counts by method and path class, latency, bandwidth, faults, copy
delays."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import threading
import time
import urllib.error
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import pytest
from botocore.exceptions import ClientError, ConnectionClosedError, EndpointConnectionError
from s3proxy import ProxyHandle, start_proxy

ROUNDS = 20
THREADS = 8
PROCESSES = 4

Client = Callable[..., Any]


def status_of(e: ClientError) -> int:
    return int(e.response["ResponseMetadata"]["HTTPStatusCode"])


def put_if_absent(client: Any, bucket: str, key: str, body: bytes) -> str:
    """'win', or a loss: '412' (Precondition Failed) or '409' (ConditionalRequestConflict, a concurrent write)."""
    try:
        client.put_object(Bucket=bucket, Key=key, Body=body, IfNoneMatch="*")
        return "win"
    except ClientError as e:
        if status_of(e) in (409, 412):
            return str(status_of(e))
        raise


def read(client: Any, bucket: str, key: str) -> bytes:
    data: bytes = client.get_object(Bucket=bucket, Key=key)["Body"].read()
    return data


def fresh_prefix() -> str:
    return f"test-{uuid.uuid4().hex[:12]}/"


# --- conditional writes on the server ---


def test_racing_if_none_match_puts_from_threads(s3_server: dict[str, Any], s3_client: Client) -> None:
    bucket, prefix = s3_server["bucket"], fresh_prefix()
    clients = [s3_client() for _ in range(THREADS)]
    tally: Counter[str] = Counter()
    for c in clients:
        c.head_bucket(Bucket=bucket)  # connections open before the race
    with ThreadPoolExecutor(THREADS) as pool:
        for r in range(ROUNDS):
            key = f"{prefix}round-{r}"
            barrier = threading.Barrier(THREADS)

            def attempt(i: int, key: str = key, barrier: threading.Barrier = barrier, r: int = r) -> str:
                barrier.wait()
                return put_if_absent(clients[i], bucket, key, f"thread {i} round {r}".encode())

            outcomes = list(pool.map(attempt, range(THREADS)))
            winners = [i for i, o in enumerate(outcomes) if o == "win"]
            assert len(winners) == 1, f"round {r}: {outcomes}"
            assert read(clients[0], bucket, key) == f"thread {winners[0]} round {r}".encode()
            tally.update(outcomes)
    print(f"{ROUNDS} rounds of {THREADS} threads: {dict(tally)}")


# A racer in its own process: reads a key per line on stdin, PUTs it with If-None-Match: *, prints the outcome.
RACER = textwrap.dedent(
    """
    import sys
    import boto3
    from botocore.config import Config
    from botocore.exceptions import ClientError
    endpoint, access, secret, bucket, name = sys.argv[1:6]
    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=access, aws_secret_access_key=secret,
                      region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"}, retries={"total_max_attempts": 1}))
    s3.head_bucket(Bucket=bucket)
    print("ready", flush=True)
    for line in sys.stdin:
        key = line.strip()
        try:
            s3.put_object(Bucket=bucket, Key=key, Body=("%s %s" % (name, key)).encode(), IfNoneMatch="*")
            outcome = "win"
        except ClientError as e:
            code = e.response["ResponseMetadata"]["HTTPStatusCode"]
            outcome = str(code)
        print(outcome, flush=True)
    """
)


def test_racing_if_none_match_puts_from_processes(s3_server: dict[str, Any], s3_client: Client) -> None:
    bucket, prefix = s3_server["bucket"], fresh_prefix()
    args = [s3_server["endpoint"], s3_server["access_key"], s3_server["secret_key"], bucket]
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, *args, f"process-{i}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(PROCESSES)
    ]
    try:
        for p in racers:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        client = s3_client()
        tally: Counter[str] = Counter()
        for r in range(ROUNDS):
            key = f"{prefix}round-{r}"
            for p in racers:  # all racers blocked on stdin: they start within microseconds of each other
                assert p.stdin is not None
                p.stdin.write(key + "\n")
                p.stdin.flush()
            outcomes = [p.stdout.readline().strip() for p in racers if p.stdout is not None]
            winners = [i for i, o in enumerate(outcomes) if o == "win"]
            losers = [o for o in outcomes if o in ("412", "409")]
            assert len(winners) == 1 and len(losers) == PROCESSES - 1, f"round {r}: {outcomes}"
            assert read(client, bucket, key) == f"process-{winners[0]} {key}".encode()
            tally.update(outcomes)
        print(f"{ROUNDS} rounds of {PROCESSES} processes: {dict(tally)}")
    finally:
        for p in racers:
            if p.stdin is not None:
                p.stdin.close()
        for p in racers:
            p.wait(timeout=30)
            if p.stdout is not None:
                p.stdout.close()


def test_if_match_with_a_stale_etag_fails(s3_server: dict[str, Any], s3_client: Client) -> None:
    s3, bucket, key = s3_client(), s3_server["bucket"], fresh_prefix() + "object"
    first = s3.put_object(Bucket=bucket, Key=key, Body=b"v1")["ETag"]
    second = s3.put_object(Bucket=bucket, Key=key, Body=b"v2")["ETag"]
    assert first != second
    with pytest.raises(ClientError) as stale:
        s3.put_object(Bucket=bucket, Key=key, Body=b"v3 from a stale reader", IfMatch=first)
    assert status_of(stale.value) == 412
    assert read(s3, bucket, key) == b"v2"
    third = s3.put_object(Bucket=bucket, Key=key, Body=b"v3", IfMatch=second)["ETag"]
    assert read(s3, bucket, key) == b"v3"
    assert third not in (first, second)
    with pytest.raises(ClientError) as exists:
        s3.put_object(Bucket=bucket, Key=key, Body=b"v4", IfNoneMatch="*")
    assert status_of(exists.value) == 412
    with pytest.raises(ClientError) as absent:
        s3.put_object(Bucket=bucket, Key=key + "-absent", Body=b"x", IfMatch=third)
    assert status_of(absent.value) in (404, 412)


# --- the proxy ---


def test_round_trip_through_the_proxy_is_counted(
    s3_server: dict[str, Any], s3_proxy: ProxyHandle, s3_client: Client
) -> None:
    s3, bucket, index_bucket, prefix = (
        s3_client(s3_proxy.endpoint),
        s3_server["bucket"],
        s3_server["index_bucket"],
        fresh_prefix(),
    )
    body = bytes(range(256)) * 4096  # 1 MiB
    s3.put_object(Bucket=bucket, Key=prefix + "part-0.parquet", Body=body)
    assert read(s3, bucket, prefix + "part-0.parquet") == body
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=prefix)
    assert [o["Key"] for o in listed["Contents"]] == [prefix + "part-0.parquet"]
    assert s3.head_object(Bucket=bucket, Key=prefix + "part-0.parquet")["ContentLength"] == len(body)
    s3.put_object(Bucket=bucket, Key=prefix + "_delta_log/00000000000000000000.json", Body=b"{}")
    s3.list_objects_v2(Bucket=bucket, Prefix=prefix + "_delta_log/")
    s3.put_object(Bucket=bucket, Key=prefix + "_sparkbloom/ix/v1/part-0.parquet", Body=b"index")
    s3.put_object(Bucket=index_bucket, Key=prefix + "ix/part-0.parquet", Body=b"index")
    s3.copy_object(
        Bucket=bucket, Key=prefix + "part-1.parquet", CopySource={"Bucket": bucket, "Key": prefix + "part-0.parquet"}
    )
    for key in (
        "part-0.parquet",
        "part-1.parquet",
        "_delta_log/00000000000000000000.json",
        "_sparkbloom/ix/v1/part-0.parquet",
    ):
        s3.delete_object(Bucket=bucket, Key=prefix + key)
    s3.delete_object(Bucket=index_bucket, Key=prefix + "ix/part-0.parquet")

    stats = s3_proxy.stats()
    assert stats["by_class_method"] == {
        "data": {"PUT": 1, "GET": 1, "LIST": 1, "HEAD": 1, "COPY": 1, "DELETE": 2},
        "log": {"PUT": 1, "LIST": 1, "DELETE": 1},
        "index": {"PUT": 2, "DELETE": 2},
    }
    assert stats["by_method"] == {"PUT": 4, "GET": 1, "LIST": 2, "HEAD": 1, "COPY": 1, "DELETE": 5}
    assert stats["requests"] == 14 == sum(stats["by_class"].values())
    assert stats["status"] == {"200": 9, "204": 5}
    assert stats["bytes_sent"]["data"] >= len(body)  # the GET's body, and the listing's and copy's XML
    assert stats["bytes_received"]["data"] == len(body)
    assert stats["bytes_received"]["index"] == 2 * len(b"index")
    assert stats["faults"] == {"503": 0, "reset": 0, "stall": 0}
    assert stats["errors"] == 0
    assert stats["connections"] == 1 == stats["upstream_connections"]  # keep-alive on both sides, PUTs included
    s3_proxy.reset()
    assert s3_proxy.stats()["requests"] == 0


def test_latency_delays_every_response(s3_server: dict[str, Any], s3_proxy: ProxyHandle, s3_client: Client) -> None:
    s3, bucket, key = s3_client(s3_proxy.endpoint), s3_server["bucket"], fresh_prefix() + "object"
    s3.head_bucket(Bucket=bucket)  # connection open
    s3_proxy.configure(latency_ms=200)
    timings = {}
    for name, call in [
        ("PUT", lambda: s3.put_object(Bucket=bucket, Key=key, Body=b"x" * 1000)),
        ("GET", lambda: read(s3, bucket, key)),
        ("HEAD", lambda: s3.head_object(Bucket=bucket, Key=key)),
        ("LIST", lambda: s3.list_objects_v2(Bucket=bucket, Prefix=key)),
        ("DELETE", lambda: s3.delete_object(Bucket=bucket, Key=key)),
    ]:
        start = time.monotonic()
        call()
        timings[name] = time.monotonic() - start
    assert all(t >= 0.2 for t in timings.values()), timings  # a lower bound only
    assert s3_proxy.stats()["by_method"] == {"HEAD": 2, "PUT": 1, "GET": 1, "LIST": 1, "DELETE": 1}


def test_bandwidth_cap_paces_response_bodies(
    s3_server: dict[str, Any], s3_proxy: ProxyHandle, s3_client: Client
) -> None:
    s3, bucket, key = s3_client(s3_proxy.endpoint), s3_server["bucket"], fresh_prefix() + "object"
    body = b"b" * 1_000_000
    s3.put_object(Bucket=bucket, Key=key, Body=body)
    s3_proxy.configure(bandwidth_mbps=2)  # 1 MB at 2 MB/s: 0.5 s, less the first 64 KiB sent at once
    start = time.monotonic()
    assert read(s3, bucket, key) == body
    assert time.monotonic() - start >= 0.45
    assert s3_proxy.stats()["bytes_sent"]["data"] >= len(body)
    s3.delete_object(Bucket=bucket, Key=key)


def test_503_faults(s3_server: dict[str, Any], s3_proxy: ProxyHandle, s3_client: Client) -> None:
    s3, bucket, key = s3_client(s3_proxy.endpoint), s3_server["bucket"], fresh_prefix() + "object"
    direct = s3_client()
    s3_proxy.configure(fault_rate=1.0, fault_kinds=["503"])
    for call in (
        lambda: s3.put_object(Bucket=bucket, Key=key, Body=b"never stored"),
        lambda: s3.head_object(Bucket=bucket, Key=key),
        lambda: s3.list_objects_v2(Bucket=bucket, Prefix=key),
    ):
        with pytest.raises(ClientError) as failed:
            call()
        assert status_of(failed.value) == 503
    assert failed.value.response["Error"]["Code"] == "SlowDown"
    with pytest.raises(ClientError) as missing:
        direct.head_object(Bucket=bucket, Key=key)
    assert status_of(missing.value) == 404  # the faulted PUT never reached the server
    stats = s3_proxy.stats()
    assert stats["faults"]["503"] == 3 and stats["status"] == {"503": 3}

    # One fault, then the client's retry goes through.
    s3_proxy.configure(fault_max=4)
    retrying = s3_client(s3_proxy.endpoint, max_attempts=3)
    retrying.put_object(Bucket=bucket, Key=key, Body=b"stored on the second attempt")
    assert read(direct, bucket, key) == b"stored on the second attempt"
    stats = s3_proxy.stats()
    assert stats["faults"]["503"] == 4 and stats["by_method"]["PUT"] == 3

    # Faults in one path class only.
    s3_proxy.reset()
    s3_proxy.configure(fault_max=0, fault_class="index")
    s3.put_object(Bucket=bucket, Key=key + "/_delta_log/0.json", Body=b"{}")
    with pytest.raises(ClientError) as index_fault:
        s3.put_object(Bucket=bucket, Key=key + "/_sparkbloom/ix/part-0.parquet", Body=b"index")
    assert status_of(index_fault.value) == 503
    assert s3_proxy.stats()["faults"]["503"] == 1
    s3_proxy.configure(fault_rate=0)
    for k in (key, key + "/_delta_log/0.json"):
        s3.delete_object(Bucket=bucket, Key=k)


def test_reset_fault_drops_the_connection(s3_server: dict[str, Any], s3_proxy: ProxyHandle, s3_client: Client) -> None:
    s3, bucket, key = s3_client(s3_proxy.endpoint), s3_server["bucket"], fresh_prefix() + "object"
    s3.put_object(Bucket=bucket, Key=key, Body=b"data")
    s3_proxy.configure(fault_rate=1.0, fault_kinds=["reset"])
    with pytest.raises((ConnectionClosedError, EndpointConnectionError)):
        s3.get_object(Bucket=bucket, Key=key)
    with pytest.raises((ConnectionClosedError, EndpointConnectionError)):
        s3.put_object(Bucket=bucket, Key=key, Body=b"overwrite, never stored")
    stats = s3_proxy.stats()
    assert stats["faults"]["reset"] == 2 and stats["status"] == {"200": 1}  # the first PUT's only
    s3_proxy.configure(fault_rate=0)
    assert read(s3, bucket, key) == b"data"
    s3.delete_object(Bucket=bucket, Key=key)


def test_stall_fault_holds_the_request(s3_server: dict[str, Any], s3_proxy: ProxyHandle, s3_client: Client) -> None:
    s3, bucket, key = s3_client(s3_proxy.endpoint), s3_server["bucket"], fresh_prefix() + "object"
    s3_proxy.configure(fault_rate=1.0, fault_kinds=["stall"], stall_ms=300)
    start = time.monotonic()
    s3.put_object(Bucket=bucket, Key=key, Body=b"late")
    assert time.monotonic() - start >= 0.3
    stats = s3_proxy.stats()
    assert stats["faults"]["stall"] == 1 and stats["status"] == {"200": 1}
    s3_proxy.configure(fault_rate=0)
    assert read(s3, bucket, key) == b"late"
    s3.delete_object(Bucket=bucket, Key=key)


def test_copy_delay(s3_server: dict[str, Any], s3_proxy: ProxyHandle, s3_client: Client) -> None:
    s3, bucket, prefix = s3_client(s3_proxy.endpoint), s3_server["bucket"], fresh_prefix()
    s3.put_object(Bucket=bucket, Key=prefix + "source", Body=b"renamed")
    s3_proxy.configure(copy_delay_ms=300, copy_delay_match="/slow/")
    timings = {}
    for name in ("slow/target", "fast/target"):
        start = time.monotonic()
        s3.copy_object(Bucket=bucket, Key=prefix + name, CopySource={"Bucket": bucket, "Key": prefix + "source"})
        timings[name] = time.monotonic() - start
    assert timings["slow/target"] >= 0.3
    assert read(s3, bucket, prefix + "slow/target") == b"renamed"
    stats = s3_proxy.stats()
    assert stats["copies_delayed"] == 1 and stats["by_method"]["COPY"] == 2
    for key in ("source", "slow/target", "fast/target"):
        s3.delete_object(Bucket=bucket, Key=prefix + key)


def test_control_endpoint_rejects_bad_settings(s3_proxy: ProxyHandle) -> None:
    for bad in ({"fault_rate": 2}, {"fault_kinds": ["boom"]}, {"no_such_setting": 1}, {"fault_class": "nope"}):
        with pytest.raises(urllib.error.HTTPError) as rejected:
            s3_proxy.configure(**bad)
        assert rejected.value.code == 400
    assert s3_proxy.configure(latency_ms=5)["latency_ms"] == 5
    assert s3_proxy.stats()["config"]["fault_rate"] == 0


# --- byte-exact pass-through, against a scripted upstream ---


class ScriptedUpstream:
    """A server that records every byte it receives and plays a fixed script: read up to a marker, send a reply."""

    def __init__(self, script: list[tuple[bytes, bytes]]) -> None:
        self.script = script
        self.received = b""
        self.sent = b""
        self.connections = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        conn, _ = self.sock.accept()
        self.connections += 1
        conn.settimeout(10)
        pending = b""
        for marker, reply in self.script:
            while marker not in pending:
                data = conn.recv(65536)
                if not data:
                    return
                pending += data
                self.received += data
            pending = pending[pending.index(marker) + len(marker) :]
            conn.sendall(reply)
            self.sent += reply
        self.sock.settimeout(0.5)
        try:  # a second connection would be a failure of keep-alive
            self.sock.accept()
            self.connections += 1
        except OSError:
            pass
        conn.close()


def recv_until(sock: socket.socket, marker: bytes, received: bytearray) -> None:
    while marker not in received:
        data = sock.recv(65536)
        assert data, f"connection closed; received {bytes(received)!r}"
        received += data


@pytest.fixture
def scripted() -> Iterator[Callable[[list[tuple[bytes, bytes]]], tuple[ScriptedUpstream, ProxyHandle]]]:
    started: list[tuple[ScriptedUpstream, ProxyHandle]] = []

    def start(script: list[tuple[bytes, bytes]]) -> tuple[ScriptedUpstream, ProxyHandle]:
        upstream = ScriptedUpstream(script)
        started.append((upstream, start_proxy(f"127.0.0.1:{upstream.port}")))
        return started[-1]

    yield start
    for upstream, proxy in started:
        proxy.stop()
        upstream.sock.close()


def test_bytes_pass_through_unchanged(
    scripted: Callable[[list[tuple[bytes, bytes]]], tuple[ScriptedUpstream, ProxyHandle]],
) -> None:
    chunked_put = (
        b"PUT /sparkbloom/t/_delta_log/0.json HTTP/1.1\r\nHost: s3.example.test:4567\r\n"
        b"Authorization: AWS4-HMAC-SHA256 Credential=x, SignedHeaders=host, Signature=00\r\n"
        b"x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nx-amz-checksum-crc32: AAAAAA==\r\n\r\n"
    )
    chunked_reply = b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nETag: "e"\r\n\r\n3\r\nabc\r\n0\r\n\r\n'
    expect_head = (
        b"PUT /sparkbloom/t/part-0.parquet HTTP/1.1\r\nhost: 127.0.0.1:1\r\nContent-Length: 4\r\n"
        b"Expect: 100-continue\r\n\r\n"
    )
    continue_reply = b"HTTP/1.1 100 Continue\r\n\r\n"
    body = b"PAR1"
    put_reply = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nx-amz-id-2: abc\r\n\r\nok"
    list_request = b"GET /sparkbloom?list-type=2&prefix=t%2F_sparkbloom%2F HTTP/1.1\r\nHost: h\r\n\r\n"
    list_reply = b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n<List/>"
    upstream, proxy = scripted(
        [
            (b"\r\n\r\n" + b"5;ext=1", b""),  # the chunked PUT's head (nothing to send yet)
            (b"AAAAAA==\r\n\r\n", chunked_reply),
            (b"Expect: 100-continue\r\n\r\n", continue_reply),
            (body, put_reply),
            (b"prefix=t%2F_sparkbloom%2F HTTP/1.1\r\nHost: h\r\n\r\n", list_reply),
        ]
    )
    received = bytearray()
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as client:
        client.sendall(chunked_put)
        recv_until(client, b"abc\r\n0\r\n\r\n", received)
        client.sendall(expect_head)
        recv_until(client, b"100 Continue\r\n\r\n", received)  # relayed before the body is sent
        client.sendall(body)
        recv_until(client, b"\r\n\r\nok", received)
        client.sendall(list_request)
        recv_until(client, b"<List/>", received)
    upstream.thread.join(5)
    assert upstream.received == chunked_put + expect_head + body + list_request
    assert bytes(received) == upstream.sent == chunked_reply + continue_reply + put_reply + list_reply
    assert upstream.connections == 1  # one upstream connection carried the three requests
    stats = proxy.stats()
    assert stats["by_class_method"] == {"log": {"PUT": 1}, "data": {"PUT": 1}, "index": {"LIST": 1}}
    assert stats["bytes_received"]["log"] == len(b"hello world") and stats["bytes_sent"]["log"] == 3
    assert stats["status"] == {"200": 3}
    assert stats["connections"] == 1 == stats["upstream_connections"]
