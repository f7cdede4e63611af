#!/usr/bin/env bash
# Reads that do not grow with the history (issue 33 §5): a database filled (plain SQL,
# scripts/bench/fill-reads.py) with each of BENCH_READS_SIZES reports (250,000 and 1,000,000) in
# BENCH_READS_GROUPS groups (5,000; 3 apps × 20 versions, a few hot groups and a long tail), its
# ledger counters filled by the migration an upgraded database runs; then the time of each read
# the issue names, by curl against an idle release server, the median of 5. Prints each read's
# time at every size, the ratio of the largest size to the smallest (goal: at most 1.5) and
# whether it answers in under 100 ms at the largest, and the bytes the counters take per report.
# Nothing is asserted: the figures go to docs/performance.md.
#
#   scripts/bench-reads.sh        # assumes .build/release/stackline (make bench builds it)
#
# Environment: BENCH_READS_SIZES ("250000 1000000"), BENCH_READS_GROUPS (5000),
# BENCH_READS_CHECK=1 (run `db check` on each filled database: slow at a million reports),
# BENCH_READS_KEEP=DIR (keep each filled database there, with its hot and tail groups and version).
set -euo pipefail
SIZES="${BENCH_READS_SIZES:-250000 1000000}"
NGROUPS="${BENCH_READS_GROUPS:-5000}"
cd "$(dirname "$0")/.."
source scripts/serve-scratch.sh
require_stackline bench-reads.sh

serve_scratch bench-reads
results="$work/results"
: >"$results"

median_ms() {
  local path=$1 status
  status=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $read_token" "$base$path")
  if [ "$status" != 200 ]; then echo "HTTP$status"; return; fi
  for _ in 1 2 3 4 5; do curl -s -o /dev/null -w '%{time_total}\n' -H "Authorization: Bearer $read_token" "$base$path"; done \
    | sort -n | sed -n 3p | awk '{printf "%.0f", $1 * 1000}'
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
  if [ "${BENCH_READS_CHECK:-0}" = 1 ]; then "$STACKLINE" db check --db "$STACKLINE_DB" | tail -1; fi
  python3 - "$STACKLINE_DB" "$size" <<'PY'
import sqlite3, sys
sys.path.insert(0, "scripts/bench")
import counted_reads
counters, total = counted_reads.counter_bytes(sqlite3.connect(sys.argv[1]))
n = int(sys.argv[2])
print("bytes per report: %.0f in the file (placeholder bodies), %.0f of them the counters and the arrival index" % (total / n, counters / n))
PY
  serve_start "$STACKLINE" --workers 0 --log-level warning
  while IFS='|' read -r name path; do
    ms=$(median_ms "$path")
    printf '%-52s %8s ms\n' "$name" "$ms"
    echo "$name|$size|$ms" >>"$results"
  done <<EOF_READS
web groups page (/)|/
web hot group page|/groups/$hot
web tail group page|/groups/$tail
API hot group (GET /api/v1/groups/{fp})|/api/v1/groups/$hot
API groups list (GET /api/v1/groups)|/api/v1/groups
API groups by users (sort=users)|/api/v1/groups?sort=users
API groups ?version=&since=7d|/api/v1/groups?version=$version&since=7d
API groups ?since=7d|/api/v1/groups?since=7d
API groups ?version=|/api/v1/groups?version=$version
EOF_READS
  serve_stop
  if [ -n "${BENCH_READS_KEEP:-}" ]; then
    mkdir -p "$BENCH_READS_KEEP" && mv "$STACKLINE_DB" "$BENCH_READS_KEEP/" && echo "$hot $tail $version" >"$BENCH_READS_KEEP/reads-$size.args"
  fi
  rm -f "$STACKLINE_DB" "$STACKLINE_DB-wal" "$STACKLINE_DB-shm"
done

first=$(echo "$SIZES" | awk '{print $1}')
last=$(echo "$SIZES" | awk '{print $NF}')
echo "ratio of each read's time at $last reports to its time at $first (goal ≤ 1.5; under 100 ms at $last):"
awk -F'|' -v a="$first" -v b="$last" '
  $2 == a { t[$1 "|a"] = $3; if (!($1 in seen)) { seen[$1] = 1; order[n++] = $1 } }
  $2 == b { t[$1 "|b"] = $3 }
  END {
    for (i = 0; i < n; i++) {
      k = order[i]; x = t[k "|a"]; y = t[k "|b"]
      ratio = (x > 0) ? sprintf("%.2f", y / x) : "-"
      printf "%-52s %6s ms → %6s ms  ×%s  %s\n", k, x, y, ratio, (y + 0 < 100 && ratio + 0 <= 1.5) ? "meets the goal" : "misses the goal"
    }
  }' "$results"
