#!/usr/bin/env bash
# Queue benchmark: submits N (default 10000) distinct variants of a real Swift crash report,
# drains them with `stackline master --once --workers 2`, and prints reports/s and frames/s.
# Variants differ only in an extra top-level field, so each has its own digest and job.
# Usage: scripts/bench-queue.sh [N]      (uses the release build when present, else debug)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10000}

out=$(mktemp -d "${TMPDIR:-/tmp}/stackline-bench.XXXXXX")
trap 'rm -rf "$out"' EXIT
export STACKLINE_DB="$out/stackline.sqlite"
export STACKLINE_SYMBOLS="$out/symbols"
mkdir -p "$STACKLINE_SYMBOLS" "$out/in"

if [ -x .build/release/stackline ] && [ -x .build/release/stackline-worker ]; then
  bin=.build/release
else
  swift build
  bin=$(swift build --show-bin-path)
fi
echo "binaries: $bin"

swiftc -g -Onone Tests/Fixtures/demo/Demo.swift -o "$out/Demo"
# Real symbolication work per job: the demo's DWARF and the runtime libraries' symbol tables.
runtime_dir=$(swiftc -print-target-info | sed -n '/"runtimeLibraryPaths"/,/]/p' | grep -o '"/[^"]*"' | head -1 | tr -d '"')
"$bin/stackline" symbols add "$out/Demo" "$runtime_dir/libswiftCore.so" "$runtime_dir/libswiftSwiftOnoneSupport.so" >/dev/null
(SWIFT_BACKTRACE="enable=yes,symbolicate=off,format=json,output-to=$out/crash.json" "$out/Demo" >/dev/null 2>&1 || true) 2>/dev/null
[ -s "$out/crash.json" ] || { echo "the demo wrote no crash report" >&2; exit 1; }

# bash builtins only: no process per file.
report=$(<"$out/crash.json")
for ((i = 0; i < n; i++)); do
  printf '%s' "${report/\{/\{\"benchVariant\": $i, }" >"$out/in/$(printf 'r%06d.json' "$i")"
done

now() { date +%s.%N; }
t0=$(now)
"$bin/stackline" submit "$out/in" >"$out/ids.txt"
t1=$(now)
"$bin/stackline" master --once --workers 2 2>"$out/master.log"
t2=$(now)

done_jobs=$(grep -c 'job done' "$out/master.log" || true)
frames=$(grep 'job done' "$out/master.log" | grep -o 'frames=[0-9]*' | cut -d= -f2 | awk '{s += $1} END {print s + 0}')
resolved=$(grep 'job done' "$out/master.log" | grep -o 'symbolicated=[0-9]*' | cut -d= -f2 | awk '{s += $1} END {print s + 0}')
failed=$("$bin/stackline" status | awk '$1 == "failed" {print $2}')

awk -v n="$n" -v d="$done_jobs" -v f="$frames" -v r="$resolved" -v fail="$failed" -v t0="$t0" -v t1="$t1" -v t2="$t2" 'BEGIN {
  printf "reports submitted: %d   processed: %d   failed: %d   frames: %d (%d symbolicated)\n", n, d, fail, f, r
  printf "submit:      %7.2f s  %8.1f reports/s\n", t1 - t0, n / (t1 - t0)
  printf "process:     %7.2f s  %8.1f reports/s  %9.1f frames/s  (2 workers)\n", t2 - t1, d / (t2 - t1), f / (t2 - t1)
  printf "end to end:  %7.2f s  %8.1f reports/s  %9.1f frames/s\n", t2 - t0, d / (t2 - t0), f / (t2 - t0)
}'
[ "$done_jobs" -eq "$n" ] || { echo "expected $n processed reports, got $done_jobs" >&2; exit 1; }
