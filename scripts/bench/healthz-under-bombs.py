#!/usr/bin/env python3
"""/healthz latency of a `stackline serve` while SDK batches of gzip bombs are posted to it
(issue 28, F4; scripts/bench-serve.sh runs this).

    healthz-under-bombs.py BASE_URL INGEST_TOKEN NAMESPACE SECONDS [POSTERS]

First /healthz alone for 3 s, then POSTERS (2) processes post one batch each back to back, as
fast as the server takes them and never past its per-token rate limit (a 429 waits its
Retry-After): 100 records of 80 MiB of zeros gzipped (about 80 KiB each; every other one with its
trailer's size patched to 100 bytes, a bomb that lies), about 10 MB per batch. Meanwhile this
process, alone on its connection, times GET /healthz every 20 ms. Prints the percentiles of both
phases; p99 under bombs has a goal of < 100 ms. Nothing is asserted.
"""
import base64
import gzip
import http.client
import json
import multiprocessing
import sys
import time
import urllib.parse


def bomb_batch(namespace):
    honest = gzip.compress(bytes(80 << 20), 9)
    lying = honest[:-4] + (100).to_bytes(4, "little")
    payloads = [base64.b64encode(p).decode() for p in (honest, lying)]
    records = [
        {
            "report_id": f"bomb-{i}", "monitor_type": "appCrash", "namespace": namespace,
            "created_time": 1_700_000_000_000, "is_biz": False, "payload": payloads[i % 2],
            "meta": {"app_name": "bench", "app_version": "1.0", "session_id": "s", "device_model": "iPhone14,2"},
        }
        for i in range(100)
    ]
    return json.dumps({"records": records}).encode()


def connect(base):
    url = urllib.parse.urlsplit(base)
    return http.client.HTTPConnection(url.hostname, url.port, timeout=120)


def post_bombs(base, token, body, deadline, counts):
    conn = connect(base)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    while time.monotonic() < deadline:
        try:
            conn.request("POST", "/api/v1/ingest", body=body, headers=headers)
            response = conn.getresponse()
            response.read()
        except (OSError, http.client.HTTPException):
            counts["errors"] += 1
            conn.close()
            conn = connect(base)
            continue
        key = str(response.status)
        counts[key] = counts.get(key, 0) + 1
        if response.status == 429:
            time.sleep(float(response.getheader("Retry-After", "1")))


def probe(base, seconds):
    conn = connect(base)
    latencies = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        start = time.perf_counter()
        conn.request("GET", "/healthz")
        response = conn.getresponse()
        response.read()
        latencies.append((time.perf_counter() - start) * 1000)
        if response.status != 200:
            print(f"/healthz answered {response.status}", file=sys.stderr)
        time.sleep(0.02)
    return sorted(latencies)


def percentile(values, p):
    return values[min(len(values) - 1, int(len(values) * p / 100))] if values else float("nan")


def report(label, latencies, goal=""):
    print(f"{label}: p50 {percentile(latencies, 50):.1f} ms, p99 {percentile(latencies, 99):.1f} ms, "
          f"max {latencies[-1] if latencies else float('nan'):.1f} ms over {len(latencies)} requests{goal}")


def main():
    base, token, namespace, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    posters = int(sys.argv[5]) if len(sys.argv) > 5 else 2
    body = bomb_batch(namespace)
    report("/healthz alone", probe(base, 3))
    manager = multiprocessing.Manager()
    counts = [manager.dict(errors=0) for _ in range(posters)]
    deadline = time.monotonic() + seconds + 1
    processes = [multiprocessing.Process(target=post_bombs, args=(base, token, body, deadline, c)) for c in counts]
    for p in processes:
        p.start()
    time.sleep(1)  # the first batches are in flight
    latencies = probe(base, seconds)
    for p in processes:
        p.join()
    report(f"/healthz while {posters} clients post batches of 100 gzip bombs ({len(body) / 1e6:.1f} MB each)", latencies,
           " (goal: p99 < 100 ms)")
    totals = {}
    for c in counts:
        for key, value in c.items():
            totals[key] = totals.get(key, 0) + value
    print("bomb batches answered: " + ", ".join(f"{v} × {k}" for k, v in sorted(totals.items()) if v))


if __name__ == "__main__":
    main()
