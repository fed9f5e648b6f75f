"""A fault- and latency-injecting HTTP/1.1 reverse proxy for an S3 server (MinIO in tests, any S3 endpoint).

A client (Hadoop S3A with path-style access, boto3, ...) uses the proxy as its endpoint; every request is passed to
the upstream server byte for byte: request line and headers as received (the Host header too, which SigV4 signs),
Content-Length and chunked bodies, `Expect: 100-continue` (the interim response is relayed, and the body only once
the client sends it), keep-alive on both sides, streamed responses. On the way it can

- delay the first byte of every response (latency_ms),
- cap the rate of response bodies per client connection (bandwidth_mbps, in MB/s of 10^6 bytes; 0 = none),
- inject faults into a fraction of requests (fault_rate 0..1, seeded; fault_kinds among "503": a SlowDown S3 error,
  "reset": the client connection is reset without a response, "stall": the request waits stall_ms before it is
  forwarded), only in one path class if fault_class is set, at most fault_max times if that is set,
- delay copies (PUT with x-amz-copy-source, the first half of S3A's rename) by copy_delay_ms, only for paths
  containing copy_delay_match if that is set,

and it counts requests by method (GET, PUT, HEAD, DELETE, POST, LIST: a GET of a bucket listing, COPY: a PUT with
x-amz-copy-source) and by path class ("index": under /_sparkbloom/ or in the index bucket, "log": under
/_delta_log/ or /metadata/, "data": anything else in a bucket, "other": outside any bucket), with the response bytes
sent per class.

Control, on the same port: GET /__proxy/stats (JSON), GET /__proxy/config, POST /__proxy/config (a JSON object of
settings to change; answers the whole configuration, 400 for an unknown or invalid setting), POST /__proxy/reset
(counters to zero, settings kept), GET /__proxy/log (the requests since the reset, newest 20,000: [seconds,
method class, path class, target] each). Control requests are neither counted nor faulted. The stats:

    {"requests": 14, "by_method": {"PUT": 4, "LIST": 2, ...}, "by_class": {"data": 9, "index": 3, "log": 2, "other": 0},
     "by_class_method": {"data": {"PUT": 1, ...}, ...}, "bytes_sent": {"data": ..., ...} (response payload bytes),
     "bytes_received": {...} (request payload bytes), "status": {"200": 9, "204": 5} (final statuses, injected 503s
     included), "faults": {"503": 0, "reset": 0, "stall": 0}, "copies_delayed": 0, "connections": 1 (client
     connections that carried S3 requests), "upstream_connections": 1, "errors": 0 (connections dropped on a broken
     message or peer), "since": <epoch seconds of the last reset>, "config": {...the settings...}}

    python tests/objectstore/s3proxy.py --upstream 127.0.0.1:9000 --port 0 [--latency-ms 20] ...

prints `LISTENING <port>` as its first line of stdout. From Python, start_proxy(upstream, **settings) runs it in a
subprocess and returns a handle (.port, .endpoint, .stats(), .configure(**settings), .reset(), .stop()).
Python 3.9+ standard library only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import socket
import struct
import subprocess
import sys
import time
import urllib.request
from collections import defaultdict, deque
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

CLASSES = ("data", "index", "log", "other")
FAULT_KINDS = ("503", "reset", "stall")
MAX_HEAD = 1 << 20  # request/response line + headers
CHUNK = 64 * 1024
LOG_SIZE = 20000  # requests kept for GET /__proxy/log (the newest ones)

# Settings, their defaults and types; the CLI flags are their names with dashes (--latency-ms).
DEFAULTS: dict[str, Any] = {
    "latency_ms": 0.0,
    "bandwidth_mbps": 0.0,
    "fault_rate": 0.0,
    "fault_kinds": ["503"],
    "fault_class": None,
    "fault_max": 0,
    "stall_ms": 5000.0,
    "copy_delay_ms": 0.0,
    "copy_delay_match": None,
    "seed": 0,
    "index_bucket": "sparkbloom-index",
}


class HttpError(Exception):
    """A malformed message or a peer that went away mid-message."""


def classify(method: str, target: str, headers: dict[str, str], index_bucket: str) -> tuple[str, str]:
    """(method class, path class) of a path-style S3 request."""
    parts = urlsplit(target)
    path = unquote(parts.path)
    query = parse_qs(parts.query, keep_blank_values=True)
    segments = path.lstrip("/").split("/", 1)
    bucket = segments[0]
    key = segments[1] if len(segments) > 1 else ""
    kind = method
    if method == "GET" and bucket and not key:
        # A listing: V2 (list-type=2), V1 (no sub-resource, or prefix/delimiter); other bucket GETs (?location,
        # ?versioning, ?uploads, ...) stay GETs.
        if not query or "list-type" in query or "prefix" in query or "delimiter" in query:
            kind = "LIST"
            key = query.get("prefix", [""])[0]
    elif method == "PUT" and "x-amz-copy-source" in headers:
        kind = "COPY"
    if not bucket:
        return kind, "other"
    full = f"/{bucket}/{key}"
    if bucket == index_bucket or "/_sparkbloom/" in full:
        return kind, "index"
    if "/_delta_log/" in full or "/metadata/" in full:
        return kind, "log"
    return kind, "data"


def s3_error(code: str, message: str, resource: str) -> bytes:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Error><Code>{code}</Code><Message>{message}</Message><Resource>{resource}</Resource>"
        f"<RequestId>s3proxy-{random.getrandbits(48):012x}</RequestId></Error>"
    ).encode()


class Head:
    """A request or response head: its first line, headers, and the exact bytes received."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        lines = raw[:-4].decode("latin-1").split("\r\n")
        self.first = lines[0]
        self.headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep:
                raise HttpError(f"bad header line {line!r}")
            name = name.strip().lower()
            value = value.strip()
            # Repeated headers: joined, as HTTP allows for the ones that matter here (Connection, Transfer-Encoding).
            self.headers[name] = f"{self.headers[name]}, {value}" if name in self.headers else value

    def tokens(self, name: str) -> set[str]:
        return {t.strip().lower() for t in self.headers.get(name, "").split(",") if t.strip()}

    def chunked(self) -> bool:
        return "chunked" in self.tokens("transfer-encoding")

    def content_length(self) -> int | None:
        value = self.headers.get("content-length")
        if value is None:
            return None
        try:
            return int(value.split(",")[0])
        except ValueError as e:
            raise HttpError(f"bad Content-Length {value!r}") from e


async def read_head(reader: asyncio.StreamReader) -> Head | None:
    """The next message head, or None at a clean end of stream (nothing more was sent)."""
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as e:
        if not e.partial.strip():
            return None
        raise HttpError("stream ended inside a message head") from e
    except asyncio.LimitOverrunError as e:
        raise HttpError("message head too long") from e
    # Tolerate stray CRLFs between messages (RFC 9112 2.2).
    return Head(raw.lstrip(b"\r\n")) if raw.startswith(b"\r\n") else Head(raw)


class Pacer:
    """Bandwidth cap of one client connection: bytes may leave no faster than the configured rate."""

    def __init__(self) -> None:
        self.next_time = 0.0

    async def pace(self, nbytes: int, mbps: float) -> None:
        if mbps <= 0:
            return
        now = time.monotonic()
        if self.next_time > now:
            await asyncio.sleep(self.next_time - now)
            now = self.next_time
        self.next_time = max(now, self.next_time) + nbytes / (mbps * 1e6)


class Proxy:
    def __init__(self, upstream: tuple[str, int], settings: dict[str, Any]) -> None:
        self.upstream = upstream
        self.config = dict(DEFAULTS)
        self.rng = random.Random(0)
        self.verbose = False
        self.apply(settings)
        self.reset()

    # --- settings and counters ---

    def apply(self, settings: dict[str, Any]) -> None:
        unknown = set(settings) - set(DEFAULTS)
        if unknown:
            raise ValueError(f"unknown settings {sorted(unknown)}; known: {sorted(DEFAULTS)}")
        new = dict(self.config)
        for name, value in settings.items():
            if name == "fault_kinds":
                kinds = value.split(",") if isinstance(value, str) else list(value)
                kinds = [str(k).strip() for k in kinds if str(k).strip()]
                if not kinds or set(kinds) - set(FAULT_KINDS):
                    raise ValueError(f"fault_kinds must be a non-empty subset of {FAULT_KINDS}: {value!r}")
                new[name] = kinds
            elif name in ("fault_class", "copy_delay_match"):
                new[name] = value or None
                if name == "fault_class" and new[name] not in (None, *CLASSES):
                    raise ValueError(f"fault_class must be one of {CLASSES}: {value!r}")
            elif name in ("seed", "fault_max"):
                new[name] = int(value)
            elif name == "index_bucket":
                new[name] = str(value)
            else:
                new[name] = float(value)
        if not 0 <= new["fault_rate"] <= 1:
            raise ValueError(f"fault_rate must be within 0..1: {new['fault_rate']}")
        self.config = new
        if "seed" in settings:
            self.rng = random.Random(new["seed"])

    def reset(self) -> None:
        self.started = time.time()
        self.requests = 0
        self.by_method: dict[str, int] = defaultdict(int)
        self.by_class: dict[str, int] = defaultdict(int)
        self.by_class_method: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.bytes_sent: dict[str, int] = defaultdict(int)
        self.bytes_received: dict[str, int] = defaultdict(int)
        self.statuses: dict[str, int] = defaultdict(int)
        self.faults: dict[str, int] = defaultdict(int)
        self.copies_delayed = 0
        self.connections = 0
        self.upstream_connections = 0
        self.errors = 0
        self.log: deque[list[Any]] = deque(maxlen=LOG_SIZE)

    def stats(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "by_method": dict(self.by_method),
            "by_class": {c: self.by_class.get(c, 0) for c in CLASSES},
            "by_class_method": {c: dict(m) for c, m in self.by_class_method.items()},
            "bytes_sent": {c: self.bytes_sent.get(c, 0) for c in CLASSES},
            "bytes_received": {c: self.bytes_received.get(c, 0) for c in CLASSES},
            "status": dict(self.statuses),
            "faults": {k: self.faults.get(k, 0) for k in FAULT_KINDS},
            "copies_delayed": self.copies_delayed,
            "connections": self.connections,
            "upstream_connections": self.upstream_connections,
            "errors": self.errors,
            "since": self.started,
            "config": dict(self.config),
        }

    def choose_fault(self, path_class: str) -> str | None:
        cfg = self.config
        if cfg["fault_rate"] <= 0:
            return None
        if cfg["fault_class"] is not None and cfg["fault_class"] != path_class:
            return None
        if cfg["fault_max"] > 0 and sum(self.faults.values()) >= cfg["fault_max"]:
            return None
        if self.rng.random() >= cfg["fault_rate"]:
            return None
        kind: str = self.rng.choice(cfg["fault_kinds"])
        self.faults[kind] += 1
        return kind

    # --- connections ---

    async def serve(self, host: str, port: int) -> asyncio.Server:
        return await asyncio.start_server(self.handle, host, port, limit=MAX_HEAD)

    async def handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        conn = Connection(self, client_r, client_w)
        try:
            await conn.run()
        except (ConnectionError, HttpError, asyncio.IncompleteReadError, asyncio.TimeoutError) as e:
            self.errors += 1
            if self.verbose:
                print(f"s3proxy: connection closed: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        finally:
            await conn.close()


class Connection:
    """One client connection, with its own upstream connection (opened on demand, reused while both keep alive)."""

    def __init__(self, proxy: Proxy, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        self.proxy = proxy
        self.cr = client_r
        self.cw = client_w
        self.ur: asyncio.StreamReader | None = None
        self.uw: asyncio.StreamWriter | None = None
        self.pacer = Pacer()
        self.reset_sent = False
        self.counted = False

    async def close(self) -> None:
        await self.close_upstream()
        if not self.reset_sent:
            self.cw.close()
            with contextlib.suppress(Exception):
                await self.cw.wait_closed()

    async def close_upstream(self) -> None:
        if self.uw is not None:
            self.uw.close()
            with contextlib.suppress(Exception):
                await self.uw.wait_closed()
        self.ur = self.uw = None

    async def upstream(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self.ur is not None and self.uw is not None and not self.ur.at_eof() and not self.uw.is_closing():
            return self.ur, self.uw
        await self.close_upstream()
        host, port = self.proxy.upstream
        self.ur, self.uw = await asyncio.open_connection(host, port, limit=MAX_HEAD)
        self.proxy.upstream_connections += 1
        return self.ur, self.uw

    async def run(self) -> None:
        while True:
            head = await read_head(self.cr)
            if head is None:
                return
            parts = head.first.split(" ")
            if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
                raise HttpError(f"bad request line {head.first!r}")
            method, target, version = parts
            if urlsplit(target).path.startswith("/__proxy/"):
                keep = await self.control(method, target, head)
            else:
                keep = await self.forward(method, target, version, head)
            if not keep:
                return

    # --- the control endpoint ---

    async def control(self, method: str, target: str, head: Head) -> bool:
        length = head.content_length() or 0
        body = await self.cr.readexactly(length) if length else b""
        path = urlsplit(target).path
        proxy = self.proxy
        status, payload = 200, None
        try:
            if method == "GET" and path == "/__proxy/stats":
                payload = proxy.stats()
            elif path == "/__proxy/config" and method in ("GET", "POST"):
                if method == "POST":
                    settings = json.loads(body or b"{}")
                    if not isinstance(settings, dict):
                        raise ValueError("the body must be a JSON object")
                    proxy.apply(settings)
                payload = dict(proxy.config)
            elif method == "GET" and path == "/__proxy/log":
                payload = list(proxy.log)
            elif method == "POST" and path == "/__proxy/reset":
                proxy.reset()
                payload = {"reset": True}
            else:
                status, payload = 404, {"error": f"no {method} {path}"}
        except ValueError as e:
            status, payload = 400, {"error": str(e)}
        data = json.dumps(payload).encode()
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}[status]
        headers = f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
        self.cw.write(f"HTTP/1.1 {status} {reason}\r\n{headers}\r\n".encode() + data)
        await self.cw.drain()
        return "close" not in head.tokens("connection")

    # --- forwarding ---

    async def forward(self, method: str, target: str, version: str, head: Head) -> bool:
        proxy = self.proxy
        cfg = proxy.config
        if not self.counted:  # a client connection that carried S3 requests (not only control ones)
            proxy.connections += 1
            self.counted = True
        kind, path_class = classify(method, target, head.headers, cfg["index_bucket"])
        proxy.requests += 1
        proxy.by_method[kind] += 1
        proxy.by_class[path_class] += 1
        proxy.by_class_method[path_class][kind] += 1
        proxy.log.append([round(time.time() - proxy.started, 4), kind, path_class, unquote(target)[:300]])
        has_body = head.chunked() or (head.content_length() or 0) > 0
        expects_continue = "100-continue" in head.tokens("expect")
        first_byte_delay = [cfg["latency_ms"] / 1000]

        fault = proxy.choose_fault(path_class)
        if fault == "reset":
            self.reset_client()
            return False
        if fault == "503":
            return await self.slow_down(target, head, has_body, expects_continue, path_class, first_byte_delay)
        if fault == "stall":
            await asyncio.sleep(cfg["stall_ms"] / 1000)
        if kind == "COPY" and cfg["copy_delay_ms"] > 0:
            match = cfg["copy_delay_match"]
            if match is None or match in unquote(urlsplit(target).path):
                proxy.copies_delayed += 1
                await asyncio.sleep(cfg["copy_delay_ms"] / 1000)

        for attempt in (1, 2):
            ur, uw = await self.upstream()
            uw.write(head.raw)
            body_task = asyncio.ensure_future(self.relay_request_body(head, uw, path_class)) if has_body else None
            resp_task = asyncio.ensure_future(self.relay_response(method, ur, head, path_class, first_byte_delay))
            try:
                if body_task is not None:
                    # The body goes up while the response is awaited (it may come first: 100 Continue, or an error
                    # before the body is read); a client that drops its body half-way ends both.
                    await asyncio.wait({body_task, resp_task}, return_when=asyncio.FIRST_COMPLETED)
                    failure = body_task.exception() if body_task.done() else None
                    if failure is not None:
                        raise failure
                resp = await resp_task
            except BaseException:
                for task in (body_task, resp_task):
                    if task is not None:
                        task.cancel()
                raise
            if resp is None:
                # The upstream connection was closed before any response (an idle keep-alive connection the server
                # had just dropped): once more on a new connection when nothing is lost by it (no body), else give
                # the client the same dropped connection.
                if body_task is not None:
                    body_task.cancel()
                await self.close_upstream()
                if attempt == 1 and body_task is None:
                    continue
                proxy.errors += 1
                return False
            keep, final = resp
            if body_task is not None and not body_task.done():
                # The server answered without reading the whole body (e.g. a 4xx without 100 Continue): where the
                # client's body ends is unknown now, so neither connection can carry another request.
                body_task.cancel()
                keep = False
            proxy.statuses[str(final.first.split(" ")[1])] += 1
            client_close = "close" in head.tokens("connection") or (
                version == "HTTP/1.0" and "keep-alive" not in head.tokens("connection")
            )
            server_close = "close" in final.tokens("connection")
            if server_close or not keep:
                await self.close_upstream()
            return keep and not client_close and not server_close
        return False

    def reset_client(self) -> None:
        """Closes the client connection with a TCP reset (SO_LINGER 0), without a response."""
        sock = self.cw.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.cw.transport.abort()
        self.reset_sent = True

    async def slow_down(
        self, target: str, head: Head, has_body: bool, expects_continue: bool, path_class: str, delay: list[float]
    ) -> bool:
        """Answers 503 SlowDown in place of the server. A body the client is sending is read and dropped first; one
        it waits to send (Expect: 100-continue) is never asked for, and the connection is closed after the answer."""
        keep = True
        if has_body and not expects_continue:
            await self.relay_request_body(head, None, path_class)
        elif has_body:
            keep = False
        if delay[0] > 0:
            await asyncio.sleep(delay[0])
        body = s3_error("SlowDown", "Please reduce your request rate. (s3proxy fault)", urlsplit(target).path)
        headers = f"Content-Type: application/xml\r\nContent-Length: {len(body)}\r\n"
        if not keep:
            headers += "Connection: close\r\n"
        self.cw.write(f"HTTP/1.1 503 Slow Down\r\n{headers}\r\n".encode() + body)
        await self.cw.drain()
        self.proxy.statuses["503"] += 1
        self.proxy.bytes_sent[path_class] += len(body)
        if not keep:
            await self.linger()
        return keep and "close" not in head.tokens("connection")

    async def linger(self, seconds: float = 2.0) -> None:
        """Half-closes the client connection and drops what it still sends (a body nobody asked for) for a while, so
        that closing it does not reset it and lose the response just sent."""
        with contextlib.suppress(Exception):
            if self.cw.can_write_eof():
                self.cw.write_eof()
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                if not await asyncio.wait_for(self.cr.read(CHUNK), deadline - time.monotonic()):
                    break

    async def relay_request_body(self, head: Head, uw: asyncio.StreamWriter | None, path_class: str) -> None:
        """Copies the request body from the client to the upstream server (or drops it if uw is None), as framed."""
        n = await relay_body(self.cr, uw, head)
        self.proxy.bytes_received[path_class] += n

    async def relay_response(
        self, method: str, ur: asyncio.StreamReader, req: Head, path_class: str, delay: list[float]
    ) -> tuple[bool, Head] | None:
        """Relays interim (1xx) responses and the final one; (keep-alive possible, final head), or None if the server
        closed the connection before sending anything."""
        while True:
            resp = await read_head(ur)
            if resp is None:
                return None
            parts = resp.first.split(" ", 2)
            if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
                raise HttpError(f"bad status line {resp.first!r}")
            status = int(parts[1])
            if delay[0] > 0:
                await asyncio.sleep(delay[0])
                delay[0] = 0
            self.cw.write(resp.raw)
            if 100 <= status < 200 and status != 101:
                await self.cw.drain()
                continue
            if method == "HEAD" or status in (204, 304):
                await self.cw.drain()
                return True, resp
            framed = resp.chunked() or resp.content_length() is not None
            n = await relay_body(ur, self.cw, resp, (self.pacer, self.proxy.config), until_close=not framed)
            self.proxy.bytes_sent[path_class] += n
            return framed, resp


async def relay_body(
    src: asyncio.StreamReader,
    dst: asyncio.StreamWriter | None,
    head: Head,
    pacing: tuple[Pacer, dict[str, Any]] | None = None,
    until_close: bool = False,
) -> int:
    """Copies one message body as framed by its head, byte for byte, or reads and drops it if dst is None: chunked,
    Content-Length, else (until_close, a response without either) to the end of the stream, else none (a request
    without either). Returns the payload bytes (chunk data, without the framing)."""

    async def put(data: bytes, payload: int) -> None:
        if dst is None:
            return
        if pacing is not None and payload:
            await pacing[0].pace(payload, pacing[1]["bandwidth_mbps"])
        dst.write(data)
        await dst.drain()

    async def put_exactly(n: int, where: str) -> int:
        """Copies the next n payload bytes of src."""
        remaining = n
        while remaining > 0:
            data = await src.read(min(remaining, CHUNK))
            if not data:
                raise HttpError(f"stream ended inside {where}")
            remaining -= len(data)
            await put(data, len(data))
        return n

    total = 0
    if head.chunked():
        while True:
            line = await src.readuntil(b"\r\n")
            try:
                size = int(line.split(b";")[0].strip(), 16)
            except ValueError as e:
                raise HttpError(f"bad chunk size line {line!r}") from e
            if size == 0:
                # The last chunk, then trailers up to an empty line.
                await put(line, 0)
                while True:
                    trailer = await src.readuntil(b"\r\n")
                    await put(trailer, 0)
                    if trailer == b"\r\n":
                        return total
            await put(line, 0)
            total += await put_exactly(size, "a chunk")
            crlf = await src.readexactly(2)
            await put(crlf, 0)
    length = head.content_length()
    if length is not None:
        return total + await put_exactly(length, "a body")
    if not until_close:
        return 0
    while True:
        data = await src.read(CHUNK)
        if not data:
            return total
        total += len(data)
        await put(data, len(data))


# --- the command line ---


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--upstream", required=True, help="host:port of the S3 server")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="port to listen on; 0 (default) picks a free one")
    p.add_argument("--latency-ms", type=float, default=DEFAULTS["latency_ms"])
    p.add_argument("--bandwidth-mbps", type=float, default=DEFAULTS["bandwidth_mbps"], help="MB/s, 0 = no cap")
    p.add_argument("--fault-rate", type=float, default=DEFAULTS["fault_rate"])
    p.add_argument("--fault-kinds", default=",".join(DEFAULTS["fault_kinds"]), help="comma-separated: 503,reset,stall")
    p.add_argument("--fault-class", default=None, choices=CLASSES)
    p.add_argument("--fault-max", type=int, default=0, help="inject at most this many faults (0 = no limit)")
    p.add_argument("--stall-ms", type=float, default=DEFAULTS["stall_ms"])
    p.add_argument("--copy-delay-ms", type=float, default=DEFAULTS["copy_delay_ms"])
    p.add_argument("--copy-delay-match", default=None)
    p.add_argument("--seed", type=int, default=DEFAULTS["seed"])
    p.add_argument("--index-bucket", default=DEFAULTS["index_bucket"])
    p.add_argument("--verbose", action="store_true", help="log dropped connections to stderr")
    return p.parse_args(argv)


def settings_from_args(args: argparse.Namespace) -> dict[str, Any]:
    return {name: getattr(args, name) for name in DEFAULTS}


def split_host_port(value: str) -> tuple[str, int]:
    value = value.removeprefix("http://")
    host, _, port = value.rstrip("/").rpartition(":")
    return host or "127.0.0.1", int(port)


async def amain(args: argparse.Namespace) -> None:
    proxy = Proxy(split_host_port(args.upstream), settings_from_args(args))
    proxy.verbose = args.verbose
    server = await proxy.serve(args.host, args.port)
    port = server.sockets[0].getsockname()[1]
    print(f"LISTENING {port}", flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(amain(args))


# --- the Python helper ---


class ProxyHandle:
    """A proxy running in a subprocess (start_proxy)."""

    def __init__(self, process: subprocess.Popen[str], port: int, host: str) -> None:
        self.process = process
        self.port = port
        self.host = host

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
        req = urllib.request.Request(f"{self.endpoint}/__proxy/{path}", data=data, method=method)
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())

    def stats(self) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", "stats")
        return result

    def config(self) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", "config")
        return result

    def configure(self, **settings: Any) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", "config", settings)
        return result

    def reset(self) -> None:
        self._call("POST", "reset")

    def log(self) -> list[list[Any]]:
        """The requests since the last reset (the newest 20,000): [seconds since the reset, method class, path
        class, request target]."""
        result: list[list[Any]] = self._call("GET", "log")
        return result

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()

    def __enter__(self) -> ProxyHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_proxy(upstream: str, host: str = "127.0.0.1", port: int = 0, **settings: Any) -> ProxyHandle:
    """Starts the proxy in front of upstream ("host:port" or "http://host:port") in a subprocess; settings are those
    of POST /__proxy/config (latency_ms=20, fault_rate=0.1, fault_kinds=["503"], ...)."""
    unknown = set(settings) - set(DEFAULTS) - {"verbose"}
    if unknown:
        raise ValueError(f"unknown settings {sorted(unknown)}; known: {sorted(DEFAULTS)}")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--upstream", upstream, "--host", host, "--port", str(port)]
    for name, value in settings.items():
        flag = "--" + name.replace("_", "-")
        if name == "verbose":
            cmd += [flag] if value else []
        elif value is not None:
            cmd += [flag, ",".join(value) if isinstance(value, (list, tuple)) else str(value)]
    process = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("LISTENING "):
        process.kill()
        process.wait()
        raise RuntimeError(f"s3proxy did not start ({' '.join(cmd)}): exit {process.returncode}, said {line!r}")
    return ProxyHandle(process, int(line.split()[1]), host)


if __name__ == "__main__":
    main()
