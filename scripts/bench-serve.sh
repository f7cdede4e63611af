#!/usr/bin/env bash
# Ingest load check for `stackline serve`: wrk posts real gzip reports (each distinct) to
# POST /api/v1/reports for BENCH_SERVE_SECONDS (30) against a release server with 2 local
# workers, then prints accepted reports/s and latency percentiles, and how much of the backlog
# the queue still holds (plain SQL). The goal is >= 5,000 reports/s; nothing is asserted.
#
#   scripts/bench-serve.sh        # assumes .build/release/stackline (make bench builds it)
#
# Environment: BENCH_SERVE_SECONDS, BENCH_SERVE_CONNECTIONS (64), BENCH_SERVE_THREADS (2),
# BENCH_REPORT (default Tests/Fixtures/wild/ips/multithread-test.ips, a real .ips report).
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

work=$(mktemp -d "${TMPDIR:-/tmp}/stackline-bench-serve.XXXXXX")
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
export STACKLINE_DB="$work/db.sqlite" STACKLINE_SYMBOLS="$work/symbols"
mkdir -p "$STACKLINE_SYMBOLS"

# The report compressed once: a gzip header and a deflate stream ended by a sync flush (not
# final), which the wrk script completes with a distinct stored block per request.
read -r crc len < <(python3 - "$REPORT" "$work/prefix.gz" <<'PY'
import sys, zlib
data = open(sys.argv[1], "rb").read()
c = zlib.compressobj(6, zlib.DEFLATED, -15)
body = c.compress(data) + c.flush(zlib.Z_SYNC_FLUSH)
open(sys.argv[2], "wb").write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + body)
print(zlib.crc32(data), len(data))
PY
)
token=$("$STACKLINE" tokens create --scope ingest --name bench 2>/dev/null)
# A free port, chosen here: the server logs at warning level, so it does not say which it took.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$STACKLINE" serve --listen "127.0.0.1:$port" --workers "${BENCH_SERVE_WORKERS:-2}" --ingest-rate 0 --log-level warning \
  >"$work/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 300); do
  curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break
  kill -0 "$server_pid" 2>/dev/null || { echo "bench-serve.sh: stackline serve exited"; cat "$work/serve.log"; exit 1; }
  sleep 0.1
done
url="http://127.0.0.1:$port/api/v1/reports"

# One request by curl first: the body the script makes must be a report the server accepts.
echo "POST $url: $(basename "$REPORT") gzip ($(stat -c %s "$work/prefix.gz") bytes compressed, $len inflated), $CONNECTIONS connections, $THREADS wrk threads, ${SECONDS_RUN}s, server with 2 workers"
BENCH_TOKEN=$token BENCH_PREFIX=$work/prefix.gz BENCH_PREFIX_CRC=$crc BENCH_PREFIX_LEN=$len \
  wrk -t"$THREADS" -c"$CONNECTIONS" -d"${SECONDS_RUN}s" --latency -s "$root/scripts/bench/post-gzip-reports.lua" "$url" \
  | grep -E '^(accepted|latency):|Non-2xx|Socket errors'
stored=$(sqlite3 "$STACKLINE_DB" "SELECT COUNT(*) FROM reports")
backlog=$(sqlite3 "$STACKLINE_DB" "SELECT COUNT(*) FROM jobs WHERE state IN ('queued','running')")
echo "database: $stored reports stored (distinct digests), $backlog still queued for the 2 workers"
