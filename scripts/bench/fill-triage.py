#!/usr/bin/env python3
"""Fills a migrated Stackline database, with plain SQL, to the scale issue 32's bench asks for:
SESSIONS launches counted into session counters (3 versions × 30 days × OS versions × models,
each row with its users' sketch in HyperLogLog's exact form, as HyperLogLog.encoded writes it)
and REPORTS crash reports in GROUPS groups (a few hot, a long tail), each with its result, its
session, user, device, OS version and model. Bodies are placeholders: the timed queries count,
they never read a report's bytes. The ledger's counters are left to the migration that adds
them (counted_reads.py), run by the next command that opens the file.

    fill-triage.py DB SESSIONS REPORTS GROUPS
"""
import hashlib
import random
import sqlite3
import struct
import sys
import time
import zlib

import counted_reads

DAY = 86_400_000


def user_hash(key):
    return struct.unpack(">Q", hashlib.sha256(key.encode()).digest()[:8])[0]


def sketch(keys):
    hashes = sorted({user_hash(k) for k in keys})
    assert len(hashes) <= 2048, "a row's users must stay in the sketch's exact form"
    return b"\x01" + b"".join(struct.pack(">Q", h) for h in hashes)


def main():
    path, sessions, reports, groups = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    rng = random.Random(32)
    db = sqlite3.connect(path)
    db.execute("PRAGMA synchronous = OFF")
    now = int(time.time() * 1000)
    today = now // DAY
    versions = ["3.%d" % v for v in range(3)]
    oses = ["16.7", "17.4", "17.5", "18.0", "18.1"]
    models = ["iPhone14,2", "iPhone15,2", "iPhone16,1", "iPad13,4"]
    days = list(range(today - 29, today + 1))
    rows = [(v, d, o, m) for v in versions for d in days for o in oses for m in models]
    per_row = sessions // len(rows)
    users = 50_000
    for v, d, o, m in rows:
        keys = ["u:user-%d" % rng.randrange(users) for _ in range(per_row)]
        db.execute(
            "INSERT INTO session_counters (namespace, app, version, day, os_version, device_model, sessions, users, first_seen, last_seen)"
            " VALUES ('bench', 'Bench', ?, ?, ?, ?, ?, ?, ?, ?)",
            (v, d, o, m, per_row, sketch(keys), d * DAY, d * DAY + DAY - 1))
    columns = {r[1] for r in db.execute("PRAGMA table_info(report_sessions)")}
    context = "os_version" in columns
    raw = zlib.compress(b"placeholder")
    # Group sizes: a few hot groups, a long tail (Zipf-like weights).
    weights = [1.0 / (g + 1) for g in range(groups)]
    fingerprints = ["%032x" % rng.getrandbits(128) for _ in range(groups)]
    counts = {}
    for i in range(1, reports + 1):
        g = rng.choices(range(groups), weights)[0] if i > groups else i - 1
        fp = fingerprints[g]
        v = rng.choice(versions)
        at = now - rng.randrange(30 * DAY)
        user = rng.randrange(users)
        db.execute(
            "INSERT INTO reports (id, raw, raw_size, format, digest, app, version, kind, received_at, namespace, build_ids)"
            " VALUES (?, ?, 11, 'bench', ?, 'Bench', ?, 'crash', ?, 'bench', '')",
            (i, raw, "%064x" % i, v, at))
        db.execute(
            "INSERT INTO jobs (report_id, state, priority, attempts, run_after, created_at, updated_at) VALUES (?, 'done', 0, 1, ?, ?, ?)",
            (i, at, at, at))
        db.execute(
            "INSERT INTO results (report_id, symbolicated, symbolicated_size, status, fingerprint, completed_at) VALUES (?, ?, 11, 'complete', ?, ?)",
            (i, raw, fp, at))
        values = [i, "Bench", v, "s-%d" % i, "u:user-%d" % user, "user-%d" % user, "dev-%d" % user, at]
        sql = "INSERT INTO report_sessions (report_id, app, version, session_id, user_key, user_id, device_id, created_time"
        if context:
            sql += ", os_version, device_model) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            values += [rng.choice(oses), rng.choice(models)]
        else:
            sql += ") VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        db.execute(sql, values)
        counted_reads.tally(counts, fp, at, v, rep=i)
    for g, fp in enumerate(fingerprints):
        c = counts[fp]
        # No representative: the placeholder bodies are not reports to decode.
        db.execute(
            "INSERT INTO groups (fingerprint, kind, title, rules_version, frames, app, count, first_seen, last_seen)"
            " VALUES (?, 'crash', ?, 1, '[]', 'Bench', ?, ?, ?)",
            (fp, "Crash %d in Bench" % g, c["n"], c["first"], c["last"]))
        for v, n in c["versions"].items():
            db.execute("INSERT INTO group_versions (fingerprint, version, count) VALUES (?, ?, ?)", (fp, v, n))
    counted_reads.undo(db)
    db.commit()
    hot = max(counts, key=lambda f: counts[f]["n"])
    print(hot)


if __name__ == "__main__":
    main()
