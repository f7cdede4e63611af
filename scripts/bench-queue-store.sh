#!/usr/bin/env bash
# Job-store benchmark: the queue alone, SQLite then PostgreSQL, with no worker and no parsing (the hidden
# `stackline bench-queue-store` command). Into a new database on the temporary directory's disk:
# N small distinct reports submitted one per transaction and N more in transactions of 64, then
# N claims each followed by a completion with a few-KB result and a group key (the group ledger
# runs as for a real result), then N affinity claims (two remote workers with 1,000 build ids
# each) each followed by a completion, then both in batches (4 and 8 jobs per claim statement,
# their completions in one transaction each), then 1, 2 and 4 concurrent claimers (one connection
# each, batches of 4). Prints operations/s, µs and CPU µs per operation per
# phase (CPU well under wall time means waiting: for the disk, or for a CPU others hold):
# the ceiling one master's store puts on reports/s (docs/scaling.md).
#
#   scripts/bench-queue-store.sh [N]     # N reports per phase, default 10000
#
# Environment: STACKLINE (default .build/release/stackline; make bench builds it), RUNS (default
# 3: the machine is shared, so each run is printed and the spread shows the noise), TMPDIR (where
# the database goes: put it on the disk a master would use). No thresholds: it prints.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
n=${1:-10000}
runs=${RUNS:-3}
STACKLINE="${STACKLINE:-$root/.build/release/stackline}"
[ -x "$STACKLINE" ] || { echo "bench-queue-store.sh: $STACKLINE is missing: run 'swift build -c release'" >&2; exit 1; }
work="$(mktemp -d "${TMPDIR:-/tmp}/stackline-bench-queue-store.XXXXXX")"
trap 'rm -rf "$work"' EXIT

echo "database on: $(df -T "$work" | awk 'NR == 2 { print $2 " (" $1 ")" }'), $runs runs of $n reports per phase"
for ((run = 1; run <= runs; run++)); do
  "$STACKLINE" bench-queue-store --reports "$n" --db "$work/run$run.sqlite" --json >"$work/sqlite$run.json"
  rm -f "$work/run$run.sqlite"*
done

# The same on PostgreSQL 15 (a throwaway cluster on loopback, fsync off as on the test clusters;
# SQLite's synchronous=NORMAL does not fsync each commit either), one new database per run.
# BENCH_POSTGRES=0 skips it.
backends="sqlite"
if [ "${BENCH_POSTGRES:-1}" != 0 ]; then
  backends="sqlite postgres"
  cluster=$(mktemp -u /tmp/stackline-bench-pg.XXXXXX)  # /tmp itself: the postgres user must reach it
  url=$(scripts/pg-cluster.sh start "$cluster")
  trap 'scripts/pg-cluster.sh stop "$cluster"; rm -rf "$work"' EXIT
  for ((run = 1; run <= runs; run++)); do
    psql -q "$url" -c "CREATE DATABASE run$run"
    "$STACKLINE" bench-queue-store --reports "$n" --db "${url%/*}/run$run" --json >"$work/postgres$run.json"
  done
fi

# One row per phase: the rate of each run, then min–max.
python3 - "$work" "$runs" $backends <<'EOF'
import json, sys
work, runs, backends = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
for backend in backends:
    docs = [json.load(open("%s/%s%d.json" % (work, backend, r))) for r in range(1, runs + 1)]
    first = docs[0]
    print("== %s ==" % backend)
    print("reports %d bytes (%d stored); results %d bytes of JSON (%d stored)" % (
        first["reportBytes"], first["storedReportBytes"], first["resultJSONBytes"], first["resultStoredBytes"]))
    print()
    print("%-56s %s  %15s  %15s  %17s" % ("phase (ops/s per run)", "".join("%10s" % ("run %d" % r) for r in range(1, runs + 1)),
                                           "ops/s min-max", "µs/op min-max", "CPU µs/op min-max"))
    for i, phase in enumerate(first["phases"]):
        rates = [d["phases"][i]["operationsPerSecond"] for d in docs]
        us = [d["phases"][i]["microsecondsPerOperation"] for d in docs]
        cpu = [d["phases"][i]["cpuMicrosecondsPerOperation"] for d in docs]
        print("%-56s %s  %15s  %15s  %17s" % (phase["name"], "".join("%10.0f" % r for r in rates),
                                               "%.0f-%.0f" % (min(rates), max(rates)), "%.1f-%.1f" % (min(us), max(us)),
                                               "%.1f-%.1f" % (min(cpu), max(cpu))))
    print()
    for r, d in enumerate(docs, 1):
        a = d["affinity"]
        print("run %d: affinity claims %d hit, %d neutral, %d fallback, %d empty; database %.1f MB" % (
            r, a["hit"], a["neutral"], a["fallback"], a["empty"], d["databaseBytes"] / 2**20))
    print()

# Issue 33 section 4: claim + complete per second on PostgreSQL with 1, 2 and 4 concurrent
# claimers, against SQLite's in the same run (medians of the runs). CPU columns above are this
# process's only: PostgreSQL's own server processes are not in them.
if "postgres" in backends:
    def median(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2]
    rows = {b: {} for b in backends}
    for b in backends:
        docs = [json.load(open("%s/%s%d.json" % (work, b, r))) for r in range(1, runs + 1)]
        for i, phase in enumerate(docs[0]["phases"]):
            if "concurrent claimer" in phase["name"]:
                rows[b][phase["name"]] = median([d["phases"][i]["operationsPerSecond"] for d in docs])
    print("%-40s %12s %12s %18s" % ("claim + complete, jobs/s (median)", "SQLite", "PostgreSQL", "PostgreSQL/SQLite"))
    for name in rows["sqlite"]:
        s, p = rows["sqlite"][name], rows["postgres"].get(name, 0)
        print("%-40s %12.0f %12.0f %17.2fx" % (name, s, p, p / s if s else 0))
EOF
