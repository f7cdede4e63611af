#!/usr/bin/env bash
# Triage at scale (issue 32): appBoot launches per second through POST /api/v1/ingest in SDK
# batches of 100, with the server's CPU per launch; then the time of the release-health,
# group-list-by-users, group and facet queries over a database filled (plain SQL,
# scripts/bench/fill-triage.py) with BENCH_TRIAGE_SESSIONS launches (1,000,000) and
# BENCH_TRIAGE_REPORTS crash reports (100,000) in 5,000 groups. Each query is timed by curl
# against an idle release server, the median of 5. Nothing is asserted: the figures go to
# docs/performance.md.
#
#   scripts/bench-triage.sh       # assumes .build/release/stackline (make bench builds it)
#
# Environment: BENCH_TRIAGE_SECONDS (20), BENCH_TRIAGE_POSTERS (2), BENCH_TRIAGE_SESSIONS,
# BENCH_TRIAGE_REPORTS, BENCH_TRIAGE_GROUPS (5000).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/serve-scratch.sh
require_stackline bench-triage.sh
SECONDS_RUN="${BENCH_TRIAGE_SECONDS:-20}"
POSTERS="${BENCH_TRIAGE_POSTERS:-2}"
SESSIONS="${BENCH_TRIAGE_SESSIONS:-1000000}"
REPORTS="${BENCH_TRIAGE_REPORTS:-100000}"
NGROUPS="${BENCH_TRIAGE_GROUPS:-5000}"

serve_scratch bench-triage
"$STACKLINE" namespaces set-key bench >/dev/null
ingest=$("$STACKLINE" tokens create --scope ingest --name bench 2>/dev/null)
serve_start "$STACKLINE" --workers 1 --ingest-rate 0 --log-level warning
server_ticks() { awk '{print $14 + $15}' "/proc/$server_pid/stat"; }
before=$(server_ticks)
echo "POST $base/api/v1/ingest: appBoot launches in batches of 100, $POSTERS posters, ${SECONDS_RUN}s"
python3 "$root/scripts/bench/post-launches.py" "$base/api/v1/ingest" "$ingest" "$SECONDS_RUN" "$POSTERS" 100 | tee "$work/launches.out"
ticks=$(( $(server_ticks) - before ))
accepted=$(sed -n 's/^launches: \([0-9]*\) accepted.*/\1/p' "$work/launches.out")
[ "${accepted:-0}" -gt 0 ] && awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" -v n="$accepted" \
  'BEGIN { printf "server CPU: %.0f µs per launch\n", t / hz / n * 1e6 }'
echo "session counter rows: $(sqlite3 "$STACKLINE_DB" 'SELECT COUNT(*) FROM session_counters') for $(sqlite3 "$STACKLINE_DB" 'SELECT SUM(sessions) FROM session_counters') launches"
serve_stop

# The queries at scale, on a database of their own.
export STACKLINE_DB="$work/scale.sqlite"
read_token=$("$STACKLINE" tokens create --scope read --name bench 2>/dev/null)
started=$(date +%s)
hot=$(python3 "$root/scripts/bench/fill-triage.py" "$STACKLINE_DB" "$SESSIONS" "$REPORTS" "$NGROUPS")
echo "filled $SESSIONS launches and $REPORTS reports in $NGROUPS groups in $(( $(date +%s) - started )) s ($(du -m "$STACKLINE_DB" | cut -f1) MB)"
serve_start "$STACKLINE" --workers 0 --log-level warning
tail=$(sqlite3 "$STACKLINE_DB" "SELECT fingerprint FROM groups ORDER BY count, fingerprint LIMIT 1")
time_query() {
  local name=$1 path=$2 times status
  status=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $read_token" "$base$path")
  if [ "$status" != 200 ]; then printf '%-44s HTTP %s\n' "$name" "$status"; return; fi
  times=$(for _ in 1 2 3 4 5; do curl -s -o /dev/null -w '%{time_total}\n' -H "Authorization: Bearer $read_token" "$base$path"; done | sort -n)
  printf '%-44s median %6.0f ms (of 5: %s)\n' "$name" "$(echo "$times" | sed -n 3p | awk '{print $1 * 1000}')" "$(echo "$times" | awk '{printf "%.0f ", $1 * 1000}')"
}
time_query "releases (GET /api/v1/releases?app=Bench)" "/api/v1/releases?app=Bench"
time_query "groups by users (GET /api/v1/groups?sort=users)" "/api/v1/groups?sort=users"
time_query "groups by reports, with users" "/api/v1/groups"
time_query "hot group (users per version, history)" "/api/v1/groups/$hot"
time_query "tail group" "/api/v1/groups/$tail"
time_query "facets of the hot group by os_version" "/api/v1/groups/$hot/facets?key=os_version"
time_query "facets of every report by device_model" "/api/v1/facets?key=device_model"
time_query "search: version>=3.1 os_version=17.4" "/api/v1/reports?where=version%3E%3D3.1%20os_version%3D17.4"
