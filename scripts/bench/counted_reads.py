"""What the bench fillers share about the ledger's counters (issue 33 §5).

The fillers write reports, results and groups with plain SQL; the counters a group's pages read
(`GroupCounters`: per-day counts, distinct users and sessions, the results' arrival index) are
then filled by Stackline itself: `undo` takes the file back to before the migrations that add
them ("v17: counted reads", "v22: members' last reports", whose columns go with v17's
tables, and "v23: hourly counters", filled from them), and the next `stackline` command that opens it runs them, whose backfill is the code
path an upgraded database takes. `db check` compares the outcome
with the reports.
"""

COUNTER_TABLES = ["group_days", "group_version_days", "group_facets", "group_users", "group_sessions",
                  "group_version_users", "group_version_sessions", "group_hours", "group_version_hours",
                  "group_member_hours", "group_version_member_hours"]


def undo(db):
    """Drops what "v17: counted reads", "v22: members' last reports" and "v23: hourly counters"
    added and forgets that they ran (the caller commits)."""
    for table in COUNTER_TABLES:
        db.execute("DROP TABLE IF EXISTS %s" % table)
    for table in ["groups", "group_versions"]:
        for column in ["users", "sessions"]:
            db.execute("ALTER TABLE %s DROP COLUMN %s" % (table, column))
    db.execute("DROP INDEX IF EXISTS results_group_arrival")
    db.execute("DROP INDEX IF EXISTS group_versions_by_count")
    db.execute("ALTER TABLE results DROP COLUMN received_at")
    db.execute("CREATE INDEX IF NOT EXISTS results_fingerprint ON results (fingerprint)")
    db.execute("DELETE FROM grdb_migrations WHERE identifier LIKE 'v17:%' OR identifier LIKE 'v22:%' OR identifier LIKE 'v23:%'")


def counter_bytes(db):
    """Bytes the counters and the arrival index take (dbstat), and the whole file's."""
    sizes = dict(db.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"))
    names = COUNTER_TABLES + ["group_days_by_day", "group_version_days_by_group", "results_group_arrival"]
    return sum(sizes.get(n, 0) for n in names), sum(sizes.values())


def tally(counts, fingerprint, at, version, **first):
    """Counts a report into the group row a filler writes: its reports, first and last seen and
    reports per version; `first` holds what the group's first report sets (its app, its id)."""
    c = counts.setdefault(fingerprint, dict(n=0, first=at, last=at, versions={}, **first))
    c["n"] += 1
    c["first"] = min(c["first"], at)
    c["last"] = max(c["last"], at)
    c["versions"][version] = c["versions"].get(version, 0) + 1
