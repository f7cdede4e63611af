#!/usr/bin/env bash
# Reads that do not grow with the history (issue 33 §4, §5), on SQLite and on PostgreSQL: a
# database filled (plain SQL, scripts/bench/fill-reads.py) with each of BENCH_READS_SIZES reports
# (250,000 and 1,000,000) in BENCH_READS_GROUPS groups (5,000; 3 apps × 20 versions, a few hot
# groups and a long tail), its ledger counters filled by the migration an upgraded database runs;
# then the time of each read the issue names, by curl against an idle release server, the median
# of 5, and the wall time of the `stackline groups` command, the median of 5 runs (next to the
# process's start-up alone, `stackline --version`). For PostgreSQL the same file is copied
# (`stackline db copy`, timed) into a throwaway cluster (scripts/pg-cluster.sh), analysed as
# autovacuum would, and the same reads timed against a `serve --db postgres://…`. Prints, per
# backend, each read's time at every size, the ratio of the largest size to the smallest (goal:
# at most 1.5) and whether it answers in under 100 ms at the largest, the bytes per report of the
# whole database and of the counters, and whether each of PostgreSQL's answers (the response body,
# the command's output) is the same as SQLite's. Nothing is asserted: the figures go to
# docs/performance.md.
#
#   scripts/bench-reads.sh        # assumes .build/release/stackline (make bench builds it)
#
# Environment: BENCH_READS_SIZES ("250000 1000000"), BENCH_READS_GROUPS (5000),
# BENCH_READS_BACKENDS ("sqlite postgres"; postgres needs PostgreSQL 15, scripts/install-deps.sh,
# and is left out with a note when it is missing and the variable is not set),
# BENCH_READS_ANALYZE=0 (time PostgreSQL's reads right after the copy, before any ANALYZE),
# BENCH_READS_CHECK=1 (run `db check` on each filled database: slow at a million reports),
# BENCH_READS_KEEP=DIR (keep each filled database there, with its hot and tail groups and version).
set -euo pipefail
SIZES="${BENCH_READS_SIZES:-250000 1000000}"
NGROUPS="${BENCH_READS_GROUPS:-5000}"
BACKENDS="${BENCH_READS_BACKENDS:-sqlite postgres}"
cd "$(dirname "$0")/.."
source scripts/serve-scratch.sh
require_stackline bench-reads.sh

pgbin=/usr/lib/postgresql/15/bin
case " $BACKENDS " in
*" postgres "*)
  if [ ! -x "$pgbin/initdb" ]; then
    if [ -n "${BENCH_READS_BACKENDS:-}" ]; then echo "bench-reads.sh: no PostgreSQL 15 in $pgbin: run scripts/install-deps.sh" >&2; exit 1; fi
    echo "bench-reads.sh: no PostgreSQL 15 in $pgbin: timing SQLite only (scripts/install-deps.sh installs it)"
    BACKENDS=sqlite
  fi
  ;;
esac

serve_scratch bench-reads
results="$work/results"
storage="$work/storage"
: >"$results"
: >"$storage"
mkdir -p "$work/answers"

# The PostgreSQL cluster, started once: in a directory of its own under /tmp (the postgres
# user must reach it), stopped and removed on exit after the server.
pgdir=
pg_url=
pg_stop() { if [ -n "$pgdir" ]; then "$root/scripts/pg-cluster.sh" stop "$pgdir"; pgdir=; fi; }
trap 'serve_stop; pg_stop; rm -rf "$work"' EXIT
psql_pg() { "$pgbin/psql" -X -q -v ON_ERROR_STOP=1 -At "$pg_url" "$@"; }
case " $BACKENDS " in
*" postgres "*)
  pgdir=$(mktemp -d /tmp/stackline-bench-reads-pg.XXXXXX)
  pg_url=$("$root/scripts/pg-cluster.sh" start "$pgdir")
  ;;
esac

# Time of GET PATH, the median of 5 in ms (to a tenth: the filtered lists answer in a few ms, where
# whole ms moved their ratio by a sixth); its first answer's body is kept as answers/KEY.
median_ms() {
  local path=$1 key=$2 status
  status=$(curl -s -o "$work/answers/$key" -w '%{http_code}' -H "Authorization: Bearer $read_token" "$base$path")
  if [ "$status" != 200 ]; then echo "HTTP$status"; return; fi
  for _ in 1 2 3 4 5; do curl -s -o /dev/null -w '%{time_total}\n' -H "Authorization: Bearer $read_token" "$base$path"; done \
    | sort -n | sed -n 3p | awk '{printf "%.1f", $1 * 1000}'
}

# Wall time of `stackline ARGS…`, the median of 5 runs in ms; its first output is kept as answers/KEY.
median_cmd_ms() {
  local key=$1 start end
  shift
  if ! "$STACKLINE" "$@" >"$work/answers/$key" 2>"$work/answers/$key.err"; then echo "failed"; return; fi
  for _ in 1 2 3 4 5; do
    start=$(date +%s%N)
    "$STACKLINE" "$@" >/dev/null 2>&1
    end=$(date +%s%N)
    echo $(( (end - start) / 1000 ))
  done | sort -n | sed -n 3p | awk '{printf "%.0f", $1 / 1000}'
}

# Times every read against the server at $base and the CLI against DB, as BACKEND at SIZE.
time_reads() {
  local backend=$1 size=$2 db=$3 i=0 name path ms same
  while IFS='|' read -r name path; do
    i=$(( i + 1 ))
    if [ "$path" = cli ]; then
      ms=$(median_cmd_ms "$backend-$size-$i" groups --db "$db")
    elif [ "$path" = cli-start ]; then
      ms=$(median_cmd_ms "$backend-$size-$i" --version)
    else
      ms=$(median_ms "$path" "$backend-$size-$i")
    fi
    same=
    if [ "$backend" != sqlite ] && [ -f "$work/answers/sqlite-$size-$i" ]; then
      if cmp -s "$work/answers/sqlite-$size-$i" "$work/answers/$backend-$size-$i"; then same="same answer as SQLite"; else same="answer DIFFERS from SQLite's"; fi
    fi
    printf '%-52s %8s ms  %s\n' "$name" "$ms" "$same"
    echo "$backend|$name|$size|$ms|$same" >>"$results"
  done <<EOF_READS
web groups page (/)|/
web hot group page|/groups/$hot
web tail group page|/groups/$tail
API hot group (GET /api/v1/groups/{fp})|/api/v1/groups/$hot
API groups list (GET /api/v1/groups)|/api/v1/groups
API groups by users (sort=users)|/api/v1/groups?sort=users
API groups ?version=&since=7d|/api/v1/groups?version=$version&since=$since
API groups ?since=7d|/api/v1/groups?since=$since
API groups ?version=|/api/v1/groups?version=$version
CLI stackline groups|cli
(CLI start-up alone: stackline --version)|cli-start
EOF_READS
}

for size in $SIZES; do
  export STACKLINE_DB="$work/reads-$size.sqlite"
  "$STACKLINE" tokens create --scope read --name bench >/dev/null 2>&1
  started=$(date +%s)
  read -r hot tail version < <(python3 "$root/scripts/bench/fill-reads.py" "$STACKLINE_DB" "$size" "$NGROUPS")
  filled=$(date +%s)
  # Opening the file runs the migration that fills the counters from the rows.
  read_token=$("$STACKLINE" tokens create --scope read --name bench 2>/dev/null)
  echo "filled $size reports in $NGROUPS groups in $(( filled - started )) s; counters filled by the migration in $(( $(date +%s) - filled )) s"
  # "7d" as the date it meant once the file was filled: both backends then read the same window,
  # where a relative one moved on in the minutes between them (the copy) and changed the answers.
  since=$(date -u -d '7 days ago' +%Y-%m-%dT%H:%M:%SZ)
  if [ "${BENCH_READS_CHECK:-0}" = 1 ]; then "$STACKLINE" db check --db "$STACKLINE_DB" | tail -1; fi
  python3 - "$STACKLINE_DB" "$size" "$storage" <<'PY'
import sqlite3, sys
sys.path.insert(0, "scripts/bench")
import counted_reads
counters, total = counted_reads.counter_bytes(sqlite3.connect(sys.argv[1]))
n = int(sys.argv[2])
print("bytes per report: %.0f in the file (placeholder bodies), %.0f of them the counters and the arrival index" % (total / n, counters / n))
with open(sys.argv[3], "a") as f:
    f.write("sqlite|%s|%.0f|%.0f\n" % (n, total / n, counters / n))
PY
  for backend in $BACKENDS; do
    case "$backend" in
    sqlite)
      echo "-- SQLite, $size reports"
      serve_start "$STACKLINE" --workers 0 --log-level warning
      time_reads sqlite "$size" "$STACKLINE_DB"
      serve_stop
      ;;
    postgres)
      echo "-- PostgreSQL, $size reports"
      # A fresh database for each size, so its size is this copy's alone.
      "$pgbin/psql" -X -q -v ON_ERROR_STOP=1 "${pg_url%/*}/postgres" \
        -c "DROP DATABASE IF EXISTS stackline" -c "CREATE DATABASE stackline"
      started=$(date +%s%N)
      "$STACKLINE" db copy --from "$STACKLINE_DB" --to "$pg_url" >"$work/copy.log" 2>&1 || { cat "$work/copy.log" >&2; exit 1; }
      copied=$(date +%s%N)
      echo "db copy: $(tail -1 "$work/copy.log" | sed 's/ into .*;/;/') in $(awk -v ns=$(( copied - started )) 'BEGIN { printf "%.1f", ns / 1e9 }') s"
      echo "postgres|$size|copy|$(( (copied - started) / 1000000 ))" >>"$storage.copy"
      if [ "${BENCH_READS_ANALYZE:-1}" = 1 ]; then
        # What autovacuum does within a minute of the copy's commit: statistics for the
        # planner, and the visibility map index-only scans need.
        started=$(date +%s%N)
        psql_pg -c "VACUUM ANALYZE"
        echo "VACUUM ANALYZE in $(( ($(date +%s%N) - started) / 1000000 )) ms"
      fi
      psql_pg -F'|' -c "
        SELECT pg_database_size(current_database()),
               (SELECT SUM(pg_total_relation_size(t::regclass)) FROM unnest(ARRAY['group_days', 'group_version_days',
                  'group_facets', 'group_users', 'group_sessions', 'group_version_users', 'group_version_sessions', 'group_hours',
                  'group_version_hours', 'group_member_hours', 'group_version_member_hours']) t)
               + pg_relation_size('results_group_arrival'),
               (SELECT COUNT(*) FROM reports)" | {
        IFS='|' read -r dbsize counters reports
        awk -v d="$dbsize" -v c="$counters" -v n="$reports" -v s="$size" -v f="$storage" 'BEGIN {
          printf "bytes per report: %.0f in the database (pg_database_size, placeholder bodies), %.0f of them the counters and the arrival index (%d reports)\n", d / n, c / n, n
          printf "postgres|%s|%.0f|%.0f\n", s, d / n, c / n >>f }'
      }
      serve_start "$STACKLINE" --db "$pg_url" --workers 0 --log-level warning
      time_reads postgres "$size" "$pg_url"
      serve_stop
      ;;
    *) echo "bench-reads.sh: unknown backend $backend (sqlite, postgres)" >&2; exit 2 ;;
    esac
  done
  if [ -n "${BENCH_READS_KEEP:-}" ]; then
    mkdir -p "$BENCH_READS_KEEP" && mv "$STACKLINE_DB" "$BENCH_READS_KEEP/" && echo "$hot $tail $version" >"$BENCH_READS_KEEP/reads-$size.args"
  fi
  rm -f "$STACKLINE_DB" "$STACKLINE_DB-wal" "$STACKLINE_DB-shm"
done

first=$(echo "$SIZES" | awk '{print $1}')
last=$(echo "$SIZES" | awk '{print $NF}')
for backend in $BACKENDS; do
  case "$backend" in sqlite) label=SQLite ;; postgres) label=PostgreSQL ;; *) label=$backend ;; esac
  echo
  echo "$label: each read's time at $(echo "$SIZES" | sed 's/ /, /g') reports; the ratio of $last to $first (goal ≤ 1.5; under 100 ms at $last):"
  awk -F'|' -v be="$backend" -v sizes="$SIZES" -v a="$first" -v b="$last" '
    BEGIN { ns = split(sizes, size, " ") }
    $1 == be { t[$2 "|" $3] = $4; if (!($2 in seen)) { seen[$2] = 1; order[n++] = $2 } }
    END {
      for (i = 0; i < n; i++) {
        k = order[i]; line = sprintf("%-52s", k)
        for (j = 1; j <= ns; j++) line = line sprintf(" %7s ms", t[k "|" size[j]]) (j < ns ? " →" : "")
        x = t[k "|" a]; y = t[k "|" b]
        ok = (x ~ /^[0-9]+(\.[0-9]+)?$/ && y ~ /^[0-9]+(\.[0-9]+)?$/)
        ratio = (ok && x > 0) ? sprintf("%.2f", y / x) : "-"
        printf "%s  ×%-5s %s\n", line, ratio, (ok && y + 0 < 100 && ratio + 0 <= 1.5) ? "meets the goal" : "misses the goal"
      }
    }' "$results"
done
echo
echo "bytes per report (the whole database with placeholder bodies · the counters and the arrival index):"
awk -F'|' '{ printf "%-10s %8s reports: %6s · %4s\n", ($1 == "sqlite" ? "SQLite" : "PostgreSQL"), $2, $3, $4 }' "$storage"
if [ -s "$storage.copy" ]; then
  echo "db copy into PostgreSQL:"
  awk -F'|' '{ printf "  %8s reports: %.1f s\n", $2, $4 / 1000 }' "$storage.copy"
fi
if grep -q 'DIFFERS' "$results"; then
  echo "PostgreSQL's answer differs from SQLite's for: $(awk -F'|' '$5 ~ /DIFFERS/ { printf "%s%s at %s", sep, $2, $3; sep = "; " }' "$results")"
fi
