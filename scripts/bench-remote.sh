#!/usr/bin/env bash
# Remote workers against local ones: the same N (default 2000) distinct variants of a real Swift
# crash report, symbolicated (the demo's DWARF plus the Swift runtime's symbol tables) by
#   local:   stackline serve --workers 2
#   remote:  stackline serve --workers 0 and 2 `stackline-worker --connect` (--slots 1 each), each on
#            a network host of its own joined to the master's by a veth pair (Linux network
#            namespaces on this machine; every worker starts with an empty cache and no store, so
#            it fetches the debug files from the master's debuginfod endpoint first)
# and prints reports/s for both and remote/local (the goal is >= 0.80; nothing is asserted).
# Each rate is N / (all jobs done - server start), the database polled every 0.1 s; the remote
# run's clock also covers waiting for /healthz before the workers start, and their fetches.
#
#   scripts/bench-remote.sh [N]   # assumes .build/release/{stackline,stackline-worker} (swift build -c release);
#                                 # needs root (ip netns), as the end-to-end tests do
#
# Environment: BENCH_REMOTE_WORKERS (2), BENCH_REMOTE_SLOTS (1, slots per remote worker),
# BENCH_LOCAL_WORKERS (2), STACKLINE (default .build/release/stackline).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
export PATH="$PATH:/opt/swift/usr/bin"
n=${1:-2000}
STACKLINE="${STACKLINE:-$root/.build/release/stackline}"
WORKER="$(dirname "$STACKLINE")/stackline-worker"
remote_workers=${BENCH_REMOTE_WORKERS:-2}
slots=${BENCH_REMOTE_SLOTS:-1}
local_workers=${BENCH_LOCAL_WORKERS:-2}
port=8470

die() { echo "bench-remote.sh: $*" >&2; exit 1; }
[ -x "$STACKLINE" ] && [ -x "$WORKER" ] || die "$STACKLINE or $WORKER is missing: run 'swift build -c release'"
"$WORKER" --help 2>&1 | grep -q -- '--connect' || die "$WORKER has no --connect (remote workers)"
[ "$(id -u)" -eq 0 ] || die "needs root: the master and each worker run in a network namespace of their own (ip netns)"
command -v ip >/dev/null || die "ip (iproute2) is missing"
command -v sqlite3 >/dev/null || die "sqlite3 is missing (scripts/install-deps.sh)"

work=$(mktemp -d "${TMPDIR:-/tmp}/stackline-bench-remote.XXXXXX")
ns_prefix="slbench-$$"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  for ns in $(ip netns list | awk -v p="$ns_prefix-" 'index($1, p) == 1 { print $1 }'); do
    # Whatever still runs inside was started by this script.
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns delete "$ns" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

# Hosts: m (the master) and w1…wN, each joined to m by its own veth pair on 10.231.I.0/24 (m is .1).
# Nothing joins this machine's own namespace: no packet leaves the machine.
ip netns add "$ns_prefix-m"
ip -n "$ns_prefix-m" link set lo up
for i in $(seq 1 "$remote_workers"); do
  ns="$ns_prefix-w$i"
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  ip -n "$ns_prefix-m" link add "to-w$i" type veth peer name to-m netns "$ns"
  ip -n "$ns_prefix-m" addr add "10.231.$i.1/24" dev "to-w$i"
  ip -n "$ns" addr add "10.231.$i.2/24" dev to-m
  ip -n "$ns_prefix-m" link set "to-w$i" up
  ip -n "$ns" link set to-m up
done

# The store: the demo (DWARF) and the runtime libraries it loads (symbol tables), as bench-queue.sh.
mkdir -p "$work/symbols" "$work/in"
swiftc -g -Onone Tests/Fixtures/demo/Demo.swift -o "$work/Demo"
runtime_dir=$(swiftc -print-target-info | sed -n '/"runtimeLibraryPaths"/,/]/p' | grep -o '"/[^"]*"' | head -1 | tr -d '"')
"$STACKLINE" symbols add --symbols "$work/symbols" "$work/Demo" "$runtime_dir/libswiftCore.so" \
  "$runtime_dir/libswiftSwiftOnoneSupport.so" >/dev/null
(SWIFT_BACKTRACE="enable=yes,symbolicate=off,format=json,output-to=$work/crash.json" "$work/Demo" >/dev/null 2>&1 || true) 2>/dev/null
[ -s "$work/crash.json" ] || die "the demo wrote no crash report"
report=$(<"$work/crash.json")
for ((i = 0; i < n; i++)); do
  printf '%s' "${report/\{/\{\"benchVariant\": $i, }" >"$work/in/$(printf 'r%06d.json' "$i")"
done

now() { date +%s.%N; }
count() { sqlite3 -cmd '.timeout 10000' "$1" "SELECT COUNT(*) FROM jobs WHERE state = '$2'"; }
# Started through `env` without the caller's STACKLINE_* variables (a worker must not find the
# master's database or store through them); `env` and `ip netns exec` exec in place, so $! is the
# program's pid.
unset_env=()
for var in $(env | awk -F= '/^STACKLINE_/ { print $1 }'); do unset_env+=(-u "$var"); done

# run NAME MASTER_WORKERS: a fresh database with the N reports queued, a master in m; remote workers
# when MASTER_WORKERS is 0. Writes the seconds from server start to the last job done to $work/NAME.secs.
run() {
  local name=$1 master_workers=$2 db="$work/$1.sqlite" t0 t1 t_first= done_jobs failed master_pid
  "$STACKLINE" submit --db "$db" "$work/in" >/dev/null
  t0=$(now)
  env "${unset_env[@]}" ip netns exec "$ns_prefix-m" "$STACKLINE" serve --listen "0.0.0.0:$port" --db "$db" \
    --symbols "$work/symbols" --workers "$master_workers" --log-level warning >"$work/$name-master.log" 2>&1 &
  master_pid=$!
  pids+=("$master_pid")
  for _ in $(seq 1 600); do
    ip netns exec "$ns_prefix-m" curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
    kill -0 "$master_pid" 2>/dev/null || { cat "$work/$name-master.log" >&2; die "$name: stackline serve exited"; }
    sleep 0.1
  done
  if [ "$master_workers" -eq 0 ]; then
    for i in $(seq 1 "$remote_workers"); do
      local token cache="$work/$name-cache-w$i" cwd="$work/$name-cwd-w$i"
      mkdir -p "$cache" "$cwd"
      token=$("$STACKLINE" tokens create --db "$db" --scope worker --name "w$i" 2>/dev/null)
      (cd "$cwd" && exec env "${unset_env[@]}" STACKLINE_TOKEN="$token" ip netns exec "$ns_prefix-w$i" "$WORKER" \
        --connect "http://10.231.$i.1:$port" --slots "$slots" --cache "$cache" --name "w$i" \
        >"$work/$name-worker-w$i.log" 2>&1) &
      pids+=($!)
    done
  fi
  while :; do
    done_jobs=$(count "$db" done); failed=$(count "$db" failed)
    [ -z "$t_first" ] && [ "$done_jobs" -gt 0 ] && t_first=$(now)
    [ $((done_jobs + failed)) -ge "$n" ] && break
    kill -0 "$master_pid" 2>/dev/null || { cat "$work/$name-master.log" >&2; die "$name: stackline serve died"; }
    sleep 0.1
  done
  t1=$(now)
  [ "$failed" -eq 0 ] || { tail -20 "$work/$name-master.log" >&2; die "$name: $failed jobs failed"; }
  # Stop everything this run started before the next one takes the port and the CPU.
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }' >"$work/$name.secs"
  awk -v a="$t0" -v f="${t_first:-$t1}" 'BEGIN { printf "%.3f", f - a }' >"$work/$name.first"
}

echo "binaries: $(dirname "$STACKLINE"); $n reports; local: serve --workers $local_workers;" \
  "remote: serve --workers 0 + $remote_workers workers x --slots $slots over veth"
run local "$local_workers"
run remote 0
local_s=$(<"$work/local.secs") remote_s=$(<"$work/remote.secs")
local_f=$(<"$work/local.first") remote_f=$(<"$work/remote.first")
awk -v n="$n" -v l="$local_s" -v r="$remote_s" -v lf="$local_f" -v rf="$remote_f" 'BEGIN {
  lr = n / l; rr = n / r
  printf "local  (%d workers):        %7.2f s  %8.1f reports/s   (first job done after %.2f s)\n", '"$local_workers"', l, lr, lf
  printf "remote (%d workers, veth):  %7.2f s  %8.1f reports/s   (first job done after %.2f s)\n", '"$remote_workers"', r, rr, rf
  printf "remote / local: %.2f (goal >= 0.80)\n", rr / lr
}'
