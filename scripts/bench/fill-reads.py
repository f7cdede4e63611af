#!/usr/bin/env python3
"""Fills a migrated Stackline database, with plain SQL, in the shape issue 33 §5's probe had:
REPORTS iOS crash reports of 3 apps × 20 versions in GROUPS groups (each group one app's; a few
hot, a long tail: Zipf-like weights), received over the last 30 days, each with its job, its
result and (four in five) its SDK session and user, the rest naming only their device. Bodies
are placeholders: the timed reads count, they never read a report's bytes. The ledger's
counters are left to the migration that adds them (counted_reads.py). Prints the hot group's
fingerprint, the tail group's and the newest version of the hot group's app.

    fill-reads.py DB REPORTS GROUPS
"""
import random
import sqlite3
import sys
import time
import zlib

import counted_reads

DAY = 86_400_000
APPS = 3
VERSIONS = 20
USERS = 50_000


def main():
    path, reports, groups = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(33)
    db = sqlite3.connect(path)
    db.execute("PRAGMA synchronous = OFF")
    now = int(time.time() * 1000)
    raw = zlib.compress(b"placeholder")
    versions = [["%d.%d" % (a + 1, v) for v in range(VERSIONS)] for a in range(APPS)]
    fingerprints = ["%032x" % rng.getrandbits(128) for _ in range(groups)]
    weights = [1.0 / (g + 1) for g in range(groups)]
    # Every group gets its first report, the rest go by weight; drawn in blocks (choices is slow one at a time).
    picks = list(range(groups)) + rng.choices(range(groups), weights, k=max(0, reports - groups))
    counts = {}
    for i, g in enumerate(picks[:reports], start=1):
        fp, app = fingerprints[g], g % APPS
        # Newer versions crash more often: the app's users have upgraded.
        v = versions[app][min(VERSIONS - 1, int(rng.triangular(0, VERSIONS, VERSIONS)))]
        at = now - rng.randrange(30 * DAY)
        user = rng.randrange(USERS)
        sdk = rng.random() < 0.8
        db.execute(
            "INSERT INTO reports (id, raw, raw_size, format, digest, app, version, kind, received_at, namespace, build_ids, device_id)"
            " VALUES (?, ?, 11, 'bench', ?, ?, ?, 'crash', ?, 'bench', '', ?)",
            (i, raw, "%064x" % i, "App%d" % app, v, at, None if sdk else "dev-%d-%d" % (app, user)))
        db.execute(
            "INSERT INTO jobs (report_id, state, priority, attempts, run_after, created_at, updated_at) VALUES (?, 'done', 0, 1, ?, ?, ?)",
            (i, at, at, at))
        db.execute(
            "INSERT INTO results (report_id, symbolicated, symbolicated_size, status, fingerprint, completed_at)"
            " VALUES (?, ?, 11, 'complete', ?, ?)",
            (i, raw, fp, at))
        if sdk:
            db.execute(
                "INSERT INTO report_sessions (report_id, app, version, session_id, user_key, user_id, device_id, created_time)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (i, "App%d" % app, v, "s-%d" % i, "u:user-%d-%d" % (app, user), "user-%d-%d" % (app, user),
                 "dev-%d-%d" % (app, user), at))
        counted_reads.tally(counts, fp, at, v, app=app)
    for g, fp in enumerate(fingerprints):
        c = counts.get(fp)
        if c is None:
            continue
        # No representative: the placeholder bodies are not reports to decode.
        db.execute(
            "INSERT INTO groups (fingerprint, kind, title, rules_version, frames, app, count, first_seen, last_seen)"
            " VALUES (?, 'crash', ?, 1, '[]', ?, ?, ?, ?)",
            (fp, "Crash %d in App%d" % (g, c["app"]), "App%d" % c["app"], c["n"], c["first"], c["last"]))
        for v, n in c["versions"].items():
            db.execute("INSERT INTO group_versions (fingerprint, version, count) VALUES (?, ?, ?)", (fp, v, n))
    counted_reads.undo(db)
    db.commit()
    hot = max(counts, key=lambda f: counts[f]["n"])
    tail = min(counts, key=lambda f: (counts[f]["n"], f))
    print(hot, tail, versions[counts[hot]["app"]][-1])


if __name__ == "__main__":
    main()
