#!/usr/bin/env bash
# Ingest load check for `stackline serve`: wrk posts real gzip reports (each distinct) to
# POST /api/v1/reports for BENCH_SERVE_SECONDS (30) against a release server with 2 local
# workers, then prints accepted reports/s and latency percentiles, and how much of the backlog
# the queue still holds (plain SQL). The goal is >= 5,000 reports/s; nothing is asserted.
# Then /healthz latency while SDK batches of gzip bombs are posted to a fresh server at its
# default ingest rate limit (scripts/bench/healthz-under-bombs.py; goal: p99 < 100 ms).
#
#   scripts/bench-serve.sh        # assumes .build/release/stackline (make bench builds it)
#
# Environment: BENCH_SERVE_SECONDS, BENCH_SERVE_CONNECTIONS (64), BENCH_SERVE_THREADS (2), BENCH_SERVE_WORKERS (2),
# BENCH_REPORT (default Tests/Fixtures/wild/ips/multithread-test.ips, a real .ips report),
# BENCH_BOMB_SECONDS (20; 0 skips the bomb part), BENCH_BOMB_POSTERS (2).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
STACKLINE="${STACKLINE:-$root/.build/release/stackline}"
SECONDS_RUN="${BENCH_SERVE_SECONDS:-30}"
CONNECTIONS="${BENCH_SERVE_CONNECTIONS:-64}"
THREADS="${BENCH_SERVE_THREADS:-2}"
REPORT="${BENCH_REPORT:-$root/Tests/Fixtures/wild/ips/multithread-test.ips}"
command -v wrk >/dev/null || { echo "bench-serve.sh: wrk is missing (scripts/install-deps.sh)" >&2; exit 1; }
[ -x "$STACKLINE" ] || { echo "bench-serve.sh: $STACKLINE is missing: run 'swift build -c release'" >&2; exit 1; }

source "$root/scripts/serve-scratch.sh"
serve_scratch bench-serve

# The report compressed once, which the wrk script completes per request (scripts/bench/gzip-prefix.py).
read -r crc len < <(python3 "$root/scripts/bench/gzip-prefix.py" "$REPORT" "$work/prefix.gz")
token=$("$STACKLINE" tokens create --scope ingest --name bench 2>/dev/null)
serve_start "$STACKLINE" --workers "${BENCH_SERVE_WORKERS:-2}" --ingest-rate 0 --log-level warning ${BENCH_SERVE_ARGS:-}
url="$base/api/v1/reports"

workers=${BENCH_SERVE_WORKERS:-2}
echo "POST $url: $(basename "$REPORT") gzip ($(stat -c %s "$work/prefix.gz") bytes compressed, $len inflated), $CONNECTIONS connections, $THREADS wrk threads, ${SECONDS_RUN}s, server with $workers workers"
# The server's CPU time (user + system, in clock ticks) over the run: CPU per accepted report
# is steadier than reports/s on a shared machine, where wrk and the workers share the cores.
# Its parse children (`stackline-worker --parse`) count as the server: they do the parse that
# ran inside serve before the parse moved out of it.
parse_children() {
  for child in $(cat /proc/"$server_pid"/task/*/children 2>/dev/null); do
    tr '\0' ' ' < "/proc/$child/cmdline" 2>/dev/null | grep -q -- '--parse $' && echo "$child"
  done
}
server_ticks() {
  local total
  total=$(awk '{print $14 + $15}' "/proc/$server_pid/stat")
  for child in $(parse_children); do total=$(( total + $(awk '{print $14 + $15}' "/proc/$child/stat" 2>/dev/null || echo 0) )); done
  echo "$total"
}
# Parse children start on the first upload: one warm-up report, so the run's start counts them.
curl -s -o /dev/null -H "Authorization: Bearer $token" --data-binary @"$REPORT" "$url" || true
ticks_before=$(server_ticks)
BENCH_TOKEN=$token BENCH_PREFIX=$work/prefix.gz BENCH_PREFIX_CRC=$crc BENCH_PREFIX_LEN=$len \
  wrk -t"$THREADS" -c"$CONNECTIONS" -d"${SECONDS_RUN}s" --latency -s "$root/scripts/bench/post-gzip-reports.lua" "$url" \
  | grep -E '^(accepted|latency):|Non-2xx|Socket errors' | tee "$work/wrk.out"
ticks=$(( $(server_ticks) - ticks_before ))
accepted=$(sed -n 's/^accepted: \([0-9]*\) reports.*/\1/p' "$work/wrk.out")
echo "goal: >= 5,000 accepted reports/s with 2 workers"
[ "${accepted:-0}" -gt 0 ] && awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" -v n="$accepted" \
  'BEGIN { printf "server CPU: %.0f µs per accepted report (master, HTTP, ingest and the parse children; workers are other processes)\n", t / hz / n * 1e6 }'
stored=$(sqlite3 "$STACKLINE_DB" "SELECT COUNT(*) FROM reports")
backlog=$(sqlite3 "$STACKLINE_DB" "SELECT COUNT(*) FROM jobs WHERE state IN ('queued','running')")
echo "database: $stored reports stored (distinct digests), $backlog still queued for the workers"

# /healthz while batches of gzip bombs are posted (issue 28, F4): a fresh database and server
# with the default --ingest-rate, a namespaced ingest token as an app's SDK holds.
BOMB_SECONDS="${BENCH_BOMB_SECONDS:-20}"
if [ "$BOMB_SECONDS" != 0 ]; then
  serve_stop
  export STACKLINE_DB="$work/bombs.sqlite"
  "$STACKLINE" namespaces set-key bench >/dev/null 2>&1
  bomb_token=$("$STACKLINE" tokens create --scope ingest --namespace bench --name bombs 2>/dev/null)
  serve_start "$STACKLINE" --workers "$workers" --log-level warning
  python3 "$root/scripts/bench/healthz-under-bombs.py" "$base" "$bomb_token" bench "$BOMB_SECONDS" "${BENCH_BOMB_POSTERS:-2}"
fi
