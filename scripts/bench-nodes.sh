#!/usr/bin/env bash
# Two `stackline serve` nodes against one, on one PostgreSQL database (issue 33 §4), with the
# ratios taken from the same run:
#
# 1. Ingest: nginx, configured from the shipped docs/nginx.conf.example (its upstream addresses
#    and listen port rewritten to loopback ones, as MultiNodeTests does), in front of 1 node and
#    then of 2, each with --workers 0 so nothing but ingest runs. wrk posts distinct gzip reports
#    through nginx for BENCH_NODES_SECONDS (20), as bench-serve.sh does
#    (scripts/bench/post-gzip-reports.lua). Accepted reports/s, and the CPU per accepted report of
#    the serve nodes (their parse children included), nginx and the PostgreSQL server.
# 2. The queue: BENCH_NODES_REPORTS (5000) distinct variants of the demo's crash (the approach of
#    bench-queue.sh: real DWARF and runtime symbol tables in the store, so every job symbolicates)
#    submitted while no node runs, then drained by 1 node with BENCH_NODES_WORKERS (2) local
#    workers, timed until no job is queued or running; then the same reports in a fresh database
#    drained by 2 such nodes. Reports/s (from the nodes' start, and from the first completion to
#    the last, which leaves their start out), and the CPU per report of the nodes (with their
#    workers) and of PostgreSQL.
#
# Every figure of a node, of nginx and of PostgreSQL is CPU time read from /proc (user + system,
# of the process tree: children that exited count through their parent's cutime/cstime), sampled
# before and after. On a 2-core machine where wrk, nginx, the nodes, their workers and PostgreSQL
# share the cores, absolute rates say little: the ratio and the CPU per report are the figures.
# Beside them: PostgreSQL's transactions per report (pg_stat_database; fewer means larger group
# commits and claim batches), how the uploads and jobs were shared between the nodes, and how many
# cores other processes on the machine took meanwhile (/proc/stat less ours), to judge the noise.
# Nothing is asserted.
#
#   scripts/bench-nodes.sh        # assumes .build/release/stackline (make bench builds it)
#
# Environment: STACKLINE (the binary; stackline-worker must be beside it), BENCH_NODES_SECONDS (20),
# BENCH_NODES_REPORTS (5000), BENCH_NODES_WORKERS (2, local workers per node in the queue part),
# BENCH_NODES_CONNECTIONS (64), BENCH_NODES_THREADS (2, wrk's), BENCH_NODES_NGINX_WORKERS (1, as
# MultiNodeTests), BENCH_NODES_PARTS ("ingest queue"), BENCH_REPORT (the ingest part's report,
# default Tests/Fixtures/wild/ips/multithread-test.ips, as bench-serve.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
STACKLINE="${STACKLINE:-$root/.build/release/stackline}"
SECONDS_RUN="${BENCH_NODES_SECONDS:-20}"
REPORTS="${BENCH_NODES_REPORTS:-5000}"
WORKERS="${BENCH_NODES_WORKERS:-2}"
CONNECTIONS="${BENCH_NODES_CONNECTIONS:-64}"
THREADS="${BENCH_NODES_THREADS:-2}"
NGINX_WORKERS="${BENCH_NODES_NGINX_WORKERS:-1}"
PARTS="${BENCH_NODES_PARTS:-ingest queue}"
REPORT="${BENCH_REPORT:-$root/Tests/Fixtures/wild/ips/multithread-test.ips}"
NGINX=/usr/sbin/nginx
me=bench-nodes.sh
for tool in wrk psql swiftc "$NGINX"; do
  command -v "$tool" >/dev/null || { echo "$me: $tool is missing (scripts/install-deps.sh)" >&2; exit 1; }
done
[ -r "$REPORT" ] || { echo "$me: no report $REPORT" >&2; exit 1; }
[ -x "$STACKLINE" ] || { echo "$me: $STACKLINE is missing: run 'swift build -c release'" >&2; exit 1; }
# serve starts its workers and parse children from the stackline-worker beside it.
[ -x "$(dirname "$STACKLINE")/stackline-worker" ] || { echo "$me: no stackline-worker beside $STACKLINE" >&2; exit 1; }
hz=$(getconf CLK_TCK)

work=$(mktemp -d "${TMPDIR:-/tmp}/stackline-bench-nodes.XXXXXX")
# The cluster's directory directly under /tmp: as root, pg-cluster.sh runs the server as the
# `postgres` user, who cannot enter $work (mode 700).
pgdir=$(mktemp -d /tmp/stackline-bench-nodes-pg.XXXXXX)
node_pids=() node_ports=() node_logs=() nginx_pid= poll_pid=
# The shared symbol store of every node. STACKLINE_DB names a file that never exists, so that no
# command falls back to ./data/stackline.sqlite (`symbols add` requeues in a database it finds).
export STACKLINE_SYMBOLS="$work/symbols" STACKLINE_DB="$work/no-database.sqlite"
mkdir -p "$STACKLINE_SYMBOLS" "$work/in"

stop_nodes() {
  local pid
  # SIGTERM: each node drains (nothing is in flight by then) and ends its workers and parse children.
  for pid in "${node_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${node_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  node_pids=() node_ports=()
}
stop_nginx() {
  if [ -n "$nginx_pid" ]; then
    kill "$nginx_pid" 2>/dev/null || true   # SIGTERM: nginx's fast shutdown, its worker with it
    wait "$nginx_pid" 2>/dev/null || true
    nginx_pid=
  fi
}
cleanup() {
  local status=$?
  set +e
  [ -n "$poll_pid" ] && kill "$poll_pid" 2>/dev/null
  stop_nginx
  stop_nodes
  "$root/scripts/pg-cluster.sh" stop "$pgdir" || true
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# free_port and wait_healthy; demo_reports.
source "$root/scripts/serve-scratch.sh"
source "$root/scripts/bench/demo-reports.sh"

# CPU clock ticks (user + system) of a process tree: the process's own, those of the children it
# has reaped (cutime + cstime: PostgreSQL backends that ended, parse children that were replaced)
# and, recursively, those of its live children. The fields after "(comm) " are read from the
# last ") ", since a command name may hold spaces.
tree_ticks() {
  local stat f total child
  { read -r stat <"/proc/$1/stat"; } 2>/dev/null || { echo 0; return; }   # it has just ended
  read -r -a f <<<"${stat##*) }"
  total=$((f[11] + f[12] + f[13] + f[14]))
  for child in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
    total=$((total + $(tree_ticks "$child")))
  done
  echo "$total"
}
pg_ticks() { tree_ticks "$(head -n 1 "$pgdir/data/postmaster.pid")"; }
# The whole machine's busy CPU ticks (/proc/stat: all but idle and iowait). Less ours, it is what
# other processes (another benchmark, a build) took from the cores during a measurement.
machine_ticks() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat; }
# Each node's tree, in node order.
nodes_ticks() {
  local pid
  for pid in "${node_pids[@]}"; do printf '%s ' "$(tree_ticks "$pid")"; done
}
ratio_of() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0) ? a / b : 0 }'; }
seconds_of() { awk -v t="$1" -v hz="$hz" 'BEGIN { printf "%.2f", t / hz }'; }
# others MACHINE_TICKS OUR_TICKS T0 T1 KEY: prints how busy the machine was over the measurement
# and how many cores other processes took, and keeps the latter for the table.
others() {
  busy_others[$5]=$(awk -v m="$1" -v o="$2" -v a="$3" -v b="$4" -v hz="$hz" 'BEGIN { x = (m - o) / hz / (b - a); printf "%.2f", (x < 0) ? 0 : x }')
  echo "  machine: $(awk -v m="$1" -v a="$3" -v b="$4" -v hz="$hz" -v c="$(nproc)" 'BEGIN { printf "%.0f%% of %d cores busy", 100 * m / hz / (b - a) / c, c }'), other processes $(seconds_of "$(($1 - $2))") s (${busy_others[$5]} cores)"
}

# A fresh database of the cluster for each measurement, so that 1 node and 2 nodes start from the
# same (empty or filled) tables.
new_database() {
  psql -qAtX "$pg_url" -c "CREATE DATABASE $1" >/dev/null
  echo "${pg_url%/*}/$1"
}
sql() { psql -qAtX "$db" -c "$1"; }
# Transactions committed or rolled back in $db so far. A backend reports its counts when it ends
# (and at most once a second while it runs), so with `settled` this first waits for every other
# session on $db (the nodes') to have ended.
xacts() {
  local name=${db##*/}
  if [ "${1:-}" = settled ]; then
    for _ in $(seq 1 100); do
      [ "$(sql "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = '$name' AND pid <> pg_backend_pid()")" -eq 0 ] && break
      sleep 0.1
    done
  fi
  sql "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = '$name'"
}

# start_node LOG ARGS…: `stackline serve` on a free loopback port, on $db and the shared store.
# Not waited for here (wait_nodes), so that the queue part's nodes start together.
start_node() {
  local log=$1 port
  shift
  port=$(free_port)
  "$STACKLINE" serve --listen "127.0.0.1:$port" --db "$db" --symbols "$STACKLINE_SYMBOLS" \
    --max-connections-per-address 0 --ingest-rate 0 "$@" >"$work/$log.log" 2>&1 &
  node_pids+=("$!") node_ports+=("$port") node_logs+=("$work/$log.log")
}
wait_nodes() {
  local i
  for i in "${!node_pids[@]}"; do
    wait_healthy "http://127.0.0.1:${node_ports[$i]}" "${node_pids[$i]}" 600 "$me: stackline serve" "${node_logs[$i]}" || return 1
  done
}

# nginx with the shipped example as its site, as MultiNodeTests runs it: the example's upstream
# addresses become the nodes' (with one node, the second address's lines are left out), its
# `listen 80;` a loopback port; a main context of our own paths (prefix, pid, temp paths, logs),
# `daemon off` so that it is our child, and an access log naming the node each request went to.
# Each substitution must find its text, so a change of the example's shape stops the script
# instead of silently measuring another configuration.
start_nginx() {
  local dir=$work/nginx site=$work/nginx/stackline.conf
  mkdir -p "$dir"
  local example=$root/docs/nginx.conf.example
  [ "$(grep -c 'server 10\.0\.0\.11:8080 ' "$example")" -eq 2 ] &&
    [ "$(grep -c 'server 10\.0\.0\.12:8080 ' "$example")" -eq 2 ] &&
    [ "$(grep -c 'listen 80;' "$example")" -eq 1 ] ||
    { echo "$me: docs/nginx.conf.example changed shape (upstream servers, listen 80;)" >&2; return 1; }
  nginx_port=$(free_port)
  if [ "${#node_ports[@]}" -eq 1 ]; then
    sed -e '/server 10\.0\.0\.12:8080 /d' "$example"
  else
    sed -e "s/10\.0\.0\.12:8080/127.0.0.1:${node_ports[1]}/g" "$example"
  fi | sed -e "s/10\.0\.0\.11:8080/127.0.0.1:${node_ports[0]}/g" -e "s/listen 80;/listen 127.0.0.1:$nginx_port;/" >"$site"
  cat >"$dir/nginx.conf" <<EOF
daemon off;
$([ "$(id -u)" -eq 0 ] && echo "user root;")
worker_processes $NGINX_WORKERS;
pid $dir/nginx.pid;
lock_file $dir/nginx.lock;
error_log $dir/error.log warn;
events { worker_connections 1024; }
http {
    log_format nodes '\$request_method \$uri \$status upstream=\$upstream_addr upstream_status=\$upstream_status';
    access_log $dir/access.log nodes buffer=256k flush=1s;
    client_body_temp_path $dir/body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
    include $site;
}
EOF
  : >"$dir/access.log"
  "$NGINX" -t -q -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" ||
    { echo "$me: nginx -t refused the configuration" >&2; return 1; }
  "$NGINX" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" </dev/null >"$dir/nginx.out" 2>&1 &
  nginx_pid=$!
  wait_healthy "http://127.0.0.1:$nginx_port" "$nginx_pid" 300 "$me: nginx" "$dir/nginx.out" "$dir/error.log"
}

# Lines a node logged at warning or above during the ingest part (it runs at --log-level
# warning), or the first of its failures in the queue part: shown, never hidden.
show_node_trouble() {
  local i log lines
  for i in "${!node_logs[@]}"; do
    log=${node_logs[$i]}
    lines=$(grep -ciE 'warning|error|critical|lease lost|status=5[0-9][0-9]' "$log" || true)
    [ "$lines" -gt 0 ] || continue
    echo "  node $((i + 1)) logged $lines warning/error lines, the first:"
    grep -iE 'warning|error|critical|lease lost|status=5[0-9][0-9]' "$log" | head -n 3 | cut -c1-300 | sed 's/^/    /'
  done
}

pg_url=$("$root/scripts/pg-cluster.sh" start "$pgdir")
echo "binaries: $STACKLINE (and stackline-worker beside it); PostgreSQL: $pg_url; $(nproc) cores"
echo "PostgreSQL CPU: the postmaster's process tree (backends, checkpointer, WAL writer, autovacuum; ended backends through the postmaster)"

declare -A rate cpu_nodes cpu_nginx cpu_pg cpu_wrk per_report busy_others xact

# --- 1. Ingest through nginx ------------------------------------------------------------------
ingest() {
  local nodes=$1 token ticks_x ticks_p ticks_m t0 t1 x0 i accepted seconds stored uploads line ours
  local -a ticks_n ticks_after
  db=$(new_database "ingest$nodes") node_logs=()
  token=$("$STACKLINE" tokens create --db "$db" --scope ingest --name bench 2>/dev/null)
  for ((i = 0; i < nodes; i++)); do start_node "ingest$nodes-node$((i + 1))" --workers 0 --log-level warning; done
  wait_nodes
  start_nginx
  # Each node's parse children start at its first upload: one (distinct) report sent to each
  # node directly, so that the measurement starts with them running.
  for i in "${!node_ports[@]}"; do
    { cat "$REPORT"; printf '%*s\n' "$((i + 1))" ''; } |
      curl -sf -o /dev/null -H "Authorization: Bearer $token" --data-binary @- "http://127.0.0.1:${node_ports[$i]}/api/v1/reports"
  done
  echo
  echo "ingest, $nodes node(s): POST http://127.0.0.1:$nginx_port/api/v1/reports (nginx) for ${SECONDS_RUN}s, $CONNECTIONS connections, $THREADS wrk threads"
  x0=$(xacts)
  read -r -a ticks_n <<<"$(nodes_ticks)"
  ticks_x=$(tree_ticks "$nginx_pid") ticks_p=$(pg_ticks) ticks_m=$(machine_ticks) t0=$EPOCHREALTIME
  BENCH_TOKEN=$token BENCH_PREFIX=$work/prefix.gz BENCH_PREFIX_CRC=$crc BENCH_PREFIX_LEN=$len \
    /usr/bin/time -f "%U %S" -o "$work/wrk.time" \
    wrk -t"$THREADS" -c"$CONNECTIONS" -d"${SECONDS_RUN}s" --latency -s "$root/scripts/bench/post-gzip-reports.lua" \
    "http://127.0.0.1:$nginx_port/api/v1/reports" >"$work/wrk.out"
  # The uploads still in flight when wrk stopped end within the second: their CPU is counted,
  # and they are in the database's count that CPU per report divides by.
  sleep 1
  read -r -a ticks_after <<<"$(nodes_ticks)"
  ticks_x=$(($(tree_ticks "$nginx_pid") - ticks_x)) ticks_p=$(($(pg_ticks) - ticks_p)) ticks_m=$(($(machine_ticks) - ticks_m)) t1=$EPOCHREALTIME
  grep -E '^(accepted|latency):|Non-2xx|Socket errors' "$work/wrk.out" | sed 's/^/  /' || true
  accepted=$(sed -n 's/^accepted: \([0-9]*\) reports in \([0-9.]*\) s.*/\1/p' "$work/wrk.out")
  seconds=$(sed -n 's/^accepted: \([0-9]*\) reports in \([0-9.]*\) s.*/\2/p' "$work/wrk.out")
  stop_nginx   # flushes its access log
  # The access log: which node answered each upload (the last address nginx names), and the
  # answers other than 202 (a 5xx here would be nginx's or a node's; 499: uploads in flight when
  # wrk stopped and closed their connections, stored all the same).
  awk -v nodes="${node_ports[*]}" '$1 == "POST" && $2 == "/api/v1/reports" {
      n = split(nodes, port, " "); addr = $4; sub(/^upstream=/, "", addr); k = split(addr, tried, ", ")
      for (i = 1; i <= n; i++) if (tried[k] == "127.0.0.1:" port[i]) by[i]++
      if (k > 1) retried++
      status[$3]++
    }
    END {
      line = "  nginx sent uploads to:"
      for (i = 1; i <= n; i++) line = line sprintf(" node %d %d", i, by[i])
      line = line sprintf("; retried on another node: %d; statuses:", retried)
      for (s in status) line = line sprintf(" %s×%d", s, status[s])
      print line
    }' "$work/nginx/access.log"
  stored=$(sql "SELECT COUNT(*) FROM reports")
  uploads=$((stored - nodes))
  echo "  database: $stored reports stored ($nodes warm-up(s) and $uploads uploads through nginx: wrk's accepted and those in flight at its end)"
  line="  CPU:"
  for i in "${!ticks_n[@]}"; do
    ticks_after[$i]=$((ticks_after[i] - ticks_n[i]))
    line+=" node $((i + 1)) $(seconds_of "${ticks_after[$i]}") s,"
  done
  echo "$line nginx $(seconds_of "$ticks_x") s, PostgreSQL $(seconds_of "$ticks_p") s, wrk $(awk '{ printf "%.2f", $1 + $2 }' "$work/wrk.time") s"
  cpu_wrk[ingest$nodes]=$(awk -v hz="$hz" '{ printf "%.0f", ($1 + $2) * hz }' "$work/wrk.time")
  ours=$(($(printf '%s+' "${ticks_after[@]}")0 + ticks_x + ticks_p + cpu_wrk[ingest$nodes]))
  others "$ticks_m" "$ours" "$t0" "$t1" "ingest$nodes"
  show_node_trouble
  stop_nodes
  xact[ingest$nodes]=$(($(xacts settled) - x0))
  echo "  PostgreSQL: $(ratio_of "${xact[ingest$nodes]}" "$uploads") transactions per upload (${xact[ingest$nodes]} in all)"
  rate[ingest$nodes]=$(awk -v a="$accepted" -v s="$seconds" 'BEGIN { printf "%.0f", a / s }')
  per_report[ingest$nodes]=$uploads
  cpu_nodes[ingest$nodes]=$(($(printf '%s+' "${ticks_after[@]}")0)) cpu_nginx[ingest$nodes]=$ticks_x cpu_pg[ingest$nodes]=$ticks_p
}

# --- 2. The queue drained ---------------------------------------------------------------------
queue() {
  local nodes=$1 i left t0 t1 m0 m1 x0 polls=0 ticks_p ticks_m span line submitted
  local -a ticks_n
  db=$(new_database "queue$nodes") node_logs=()
  submitted=$EPOCHREALTIME
  "$STACKLINE" submit --db "$db" "$work/in" >/dev/null
  submitted=$(awk -v a="$submitted" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
  [ "$(sql "SELECT COUNT(*) FROM jobs WHERE state = 'queued'")" -eq "$REPORTS" ] ||
    { echo "$me: expected $REPORTS queued jobs in $db" >&2; return 1; }
  # One psql session polls the queue (a backend per poll would cost PostgreSQL a fork every
  # 50 ms): counts through the two partial indexes, which stay small as the queue drains.
  coproc PSQL { psql -qAtX "$db"; }
  poll_pid=$PSQL_PID
  echo
  echo "queue, $nodes node(s) with $WORKERS local workers each: $REPORTS queued reports (stackline submit took $submitted s)"
  x0=$(xacts settled)
  ticks_p=$(pg_ticks) ticks_m=$(machine_ticks) m0=$EPOCHREALTIME
  t0=$EPOCHREALTIME
  for ((i = 0; i < nodes; i++)); do start_node "queue$nodes-node$((i + 1))" --workers "$WORKERS"; done
  while :; do
    echo "SELECT (SELECT COUNT(*) FROM jobs WHERE state = 'queued') + (SELECT COUNT(*) FROM jobs WHERE state = 'running');" >&"${PSQL[1]}"
    read -r left <&"${PSQL[0]}"
    polls=$((polls + 1))
    [ "$left" -eq 0 ] && break
    for i in "${!node_pids[@]}"; do
      kill -0 "${node_pids[$i]}" 2>/dev/null || { echo "$me: node $((i + 1)) exited:" >&2; tail -n 20 "${node_logs[$i]}" >&2; return 1; }
    done
    sleep 0.05
  done
  t1=$EPOCHREALTIME
  # Sampled before the nodes stop: their trees then hold the workers' CPU too.
  read -r -a ticks_n <<<"$(nodes_ticks)"
  ticks_p=$(($(pg_ticks) - ticks_p)) ticks_m=$(($(machine_ticks) - ticks_m)) m1=$EPOCHREALTIME
  echo '\q' >&"${PSQL[1]}"
  wait "$poll_pid" 2>/dev/null || true
  poll_pid=
  stop_nodes
  # The database's transactions, less the polls (one each).
  xact[queue$nodes]=$(($(xacts settled) - x0 - polls))
  echo "  every job done or failed $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s after the nodes were started"
  echo "  jobs: $(sql "SELECT string_agg(state || ' ' || n, ', ') FROM (SELECT state, COUNT(*) AS n FROM jobs GROUP BY state ORDER BY state) s"); claimed more than once: $(sql "SELECT COUNT(*) FROM jobs WHERE attempts > 1")"
  echo "  results: $(sql "SELECT string_agg(status || ' ' || n, ', ') FROM (SELECT status, COUNT(*) AS n FROM results GROUP BY status ORDER BY status) s")"
  # `complete`: every frame in an image resolved. One report's crashing frame, as a witness.
  echo "  one result: $("$STACKLINE" report --db "$db" "$(sql "SELECT MIN(report_id) FROM results")" | grep -m 1 'Demo.swift' | tr -s ' ' | sed 's/^ //' || true)"
  span=$(sql "SELECT ROUND((MAX(completed_at) - MIN(completed_at)) / 1000.0, 2) FROM results")
  echo "  first to last completion: $span s"
  line="  jobs done by:"
  for i in "${!node_logs[@]}"; do line+=" node $((i + 1)) $(grep -c 'job done' "${node_logs[$i]}" || true)"; done
  echo "$line"
  line="  CPU:"
  for i in "${!ticks_n[@]}"; do line+=" node $((i + 1)) $(seconds_of "${ticks_n[$i]}") s,"; done
  echo "$line PostgreSQL $(seconds_of "$ticks_p") s"
  others "$ticks_m" "$(($(printf '%s+' "${ticks_n[@]}")0 + ticks_p))" "$m0" "$m1" "queue$nodes"
  echo "  PostgreSQL: $(ratio_of "${xact[queue$nodes]}" "$REPORTS") transactions per report (${xact[queue$nodes]} in all, less $polls polls)"
  show_node_trouble
  rate[queue$nodes]=$(awk -v n="$REPORTS" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / (b - a) }')
  rate[span$nodes]=$(awk -v n="$REPORTS" -v s="$span" 'BEGIN { printf "%.0f", (s > 0) ? (n - 1) / s : 0 }')
  per_report[queue$nodes]=$REPORTS
  cpu_nodes[queue$nodes]=$(($(printf '%s+' "${ticks_n[@]}")0)) cpu_pg[queue$nodes]=$ticks_p
}

case " $PARTS " in
*" ingest "*)
  # bench-serve.sh's body: the report compressed once, completed per request by the wrk script.
  read -r crc len < <(python3 "$root/scripts/bench/gzip-prefix.py" "$REPORT" "$work/prefix.gz")
  echo "ingest report: $(basename "$REPORT") gzip ($(stat -c %s "$work/prefix.gz") bytes compressed, $len inflated); nodes with --workers 0"
  ingest 1
  ingest 2
  ;;
esac

case " $PARTS " in
*" queue "*)
  # bench-queue.sh's reports and store (scripts/bench/demo-reports.sh), of the demo built with DWARF.
  swiftc -g -Onone "$root/Tests/Fixtures/demo/Demo.swift" -o "$work/Demo"
  demo_reports "$STACKLINE" "$work/Demo" "$work" "$REPORTS" || exit 1
  queue 1
  queue 2
  ;;
esac

echo
echo "bench-nodes.sh: ${SECONDS} s in all"

# --- The table --------------------------------------------------------------------------------
# CPU per report in µs: ticks / hz / reports.
us() { awk -v t="${1:-}" -v hz="$hz" -v n="${2:-0}" 'BEGIN { if (t == "" || n == 0) print "-"; else printf "%.0f", t / hz / n * 1e6 }'; }
ratio() { awk -v a="${1:-}" -v b="${2:-}" 'BEGIN { if (a == "" || b == "" || a == "-" || b == "-" || a == 0) print "-"; else printf "%.2f", b / a }'; }
row() { printf '%-44s %10s %10s %8s\n' "$1" "$2" "$3" "${4-$(ratio "$2" "$3")}"; }
echo
echo "=== bench-nodes: 2 nodes against 1 on one PostgreSQL ($(nproc) cores; CPU in µs per report) ==="
printf '%-44s %10s %10s %8s\n' "" "1 node" "2 nodes" "2/1"
case " $PARTS " in
*" ingest "*)
  row "ingest through nginx: accepted reports/s" "${rate[ingest1]}" "${rate[ingest2]}"
  for k in 1 2; do
    n=${per_report[ingest$k]}
    c_nodes[$k]=$(us "${cpu_nodes[ingest$k]}" "$n") c_nginx[$k]=$(us "${cpu_nginx[ingest$k]}" "$n")
    c_pg[$k]=$(us "${cpu_pg[ingest$k]}" "$n") c_wrk[$k]=$(us "${cpu_wrk[ingest$k]}" "$n")
    c_all[$k]=$(us "$((cpu_nodes[ingest$k] + cpu_nginx[ingest$k] + cpu_pg[ingest$k]))" "$n")
  done
  row "  CPU: serve nodes (with parse children)" "${c_nodes[1]}" "${c_nodes[2]}"
  row "  CPU: nginx" "${c_nginx[1]}" "${c_nginx[2]}"
  row "  CPU: PostgreSQL" "${c_pg[1]}" "${c_pg[2]}"
  row "  CPU: total (nodes + nginx + PostgreSQL)" "${c_all[1]}" "${c_all[2]}"
  row "  CPU: wrk (the load, not counted above)" "${c_wrk[1]}" "${c_wrk[2]}"
  row "  PostgreSQL transactions per report" "$(ratio_of "${xact[ingest1]}" "${per_report[ingest1]}")" "$(ratio_of "${xact[ingest2]}" "${per_report[ingest2]}")"
  row "  other processes on the machine (cores)" "${busy_others[ingest1]}" "${busy_others[ingest2]}" ""
  ;;
esac
case " $PARTS " in
*" queue "*)
  row "queue of $REPORTS: reports/s (start to drained)" "${rate[queue1]}" "${rate[queue2]}"
  row "  reports/s, first to last completion" "${rate[span1]}" "${rate[span2]}"
  for k in 1 2; do
    n=${per_report[queue$k]}
    q_nodes[$k]=$(us "${cpu_nodes[queue$k]}" "$n") q_pg[$k]=$(us "${cpu_pg[queue$k]}" "$n")
    q_all[$k]=$(us "$((cpu_nodes[queue$k] + cpu_pg[queue$k]))" "$n")
  done
  row "  CPU: serve nodes (with their workers)" "${q_nodes[1]}" "${q_nodes[2]}"
  row "  CPU: PostgreSQL" "${q_pg[1]}" "${q_pg[2]}"
  row "  CPU: total" "${q_all[1]}" "${q_all[2]}"
  row "  PostgreSQL transactions per report" "$(ratio_of "${xact[queue1]}" "$REPORTS")" "$(ratio_of "${xact[queue2]}" "$REPORTS")"
  row "  other processes on the machine (cores)" "${busy_others[queue1]}" "${busy_others[queue2]}" ""
  ;;
esac
