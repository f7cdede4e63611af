#!/usr/bin/env python3
"""Posts SDK batches of `appBoot` launches to POST /api/v1/ingest for a number of seconds from
several processes, each launch distinct (its own report_id, device and session), and prints
how many launches the server answered `accepted`. Standard library only.

    post-launches.py URL TOKEN SECONDS POSTERS BATCH
"""
import json
import multiprocessing
import sys
import time
import urllib.request


def poster(args):
    url, token, seconds, index, batch = args
    accepted = other = 0
    n = 0
    deadline = time.monotonic() + seconds
    now_ms = int(time.time() * 1000)
    while time.monotonic() < deadline:
        records = []
        for _ in range(batch):
            n += 1
            device = (index * 1_000_003 + n) % 200_000
            records.append({
                "report_id": "boot-%d-%d" % (index, n), "monitor_type": "appBoot", "namespace": "bench",
                "created_time": now_ms, "is_biz": False,
                "meta": {"app_name": "Bench", "app_version": "1.%d" % (n % 5), "os_version": "17.%d" % (n % 4),
                         "device_model": "iPhone%d,2" % (12 + n % 4), "device_id": "dev-%d" % device,
                         "user_id": "user-%d" % (device % 150_000), "session_id": "s-%d-%d" % (index, n)},
            })
        body = json.dumps({"records": records}).encode()
        request = urllib.request.Request(url, data=body, method="POST", headers={
            "Authorization": "Bearer " + token, "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as answer:
            for record in json.load(answer)["records"]:
                if record.get("status") == "accepted":
                    accepted += 1
                else:
                    other += 1
    return accepted, other


def main():
    url, token, seconds, posters, batch = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    started = time.monotonic()
    with multiprocessing.Pool(posters) as pool:
        results = pool.map(poster, [(url, token, seconds, i, batch) for i in range(posters)])
    elapsed = time.monotonic() - started
    accepted = sum(r[0] for r in results)
    other = sum(r[1] for r in results)
    print("launches: %d accepted, %d not, in %.1f s: %.0f launches/s" % (accepted, other, elapsed, accepted / elapsed))


if __name__ == "__main__":
    main()
