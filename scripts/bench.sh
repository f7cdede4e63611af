#!/usr/bin/env bash
# Benchmark: one batch of >= 100,000 addresses over a large debug binary (the debug build
# of stackline itself) through Stackline's batch lookup, llvm-symbolizer and eu-addr2line.
#
#   make bench                # swift build -c release, then this script
#   scripts/bench.sh          # assumes .build/release/stackline exists (builds the debug
#                             # binary used as input if it is missing)
#
# Environment: BENCH_ADDRESSES (default 100000), BENCH_EU_ADDRESSES (default 10000; eu-addr2line
# runs at a few thousand addresses/s, so it is timed on a subset and reported as a rate),
# BENCH_TARGET (the debug binary to symbolicate; default .build/debug/stackline),
# STACKLINE (the stackline to time; default .build/release/stackline), BENCH_BATCH_ONLY=1 (only
# the batch and symbolic sections, for one target: how the C++ library below is timed).
#
# Two targets, as issue 15 asks: the Swift debug binary, then a large -O2 C++ library with DWARF
# (BoringSSL, linked by scripts/bench/boringssl-library.sh from the release build's own objects).
#
# For each tool: the first lookup (a 1-address run: process start, file open, index build)
# and the steady state (batch rate with that first-lookup time taken out); then Sentry's
# symbolic on the same addresses (scripts/bench/symbolic-lookup.py), and the CPU of a new
# process answering 30 of them (scripts/bench/cold-cpu.py). No thresholds.
# Afterwards: bench-parse, bench-queue (7-frame and 30-frame reports), bench-queue-store,
# bench-serve, bench-remote, bench-nodes, bench-symcache-build, bench-triage and bench-reads.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
export PATH="$PATH:/opt/swift/usr/bin"

N="${BENCH_ADDRESSES:-100000}"
EU_N="${BENCH_EU_ADDRESSES:-10000}"
STACKLINE="${STACKLINE:-$root/.build/release/stackline}"
TARGET="${BENCH_TARGET:-$root/.build/debug/stackline}"

die() { echo "bench.sh: $*" >&2; exit 1; }
tool() {
  for t in "$@"; do command -v "$t" >/dev/null 2>&1 && { command -v "$t"; return; }; done
  die "none of: $* found (run scripts/install-deps.sh)"
}
LLVM_SYMBOLIZER="$(tool llvm-symbolizer-14 llvm-symbolizer)"
EU_ADDR2LINE="$(tool eu-addr2line)"
OBJDUMP="$(tool objdump llvm-objdump-14)"
READELF="$(tool readelf)"

[ -x "$STACKLINE" ] || die "$STACKLINE is missing: run 'swift build -c release' (make bench does)"
if [ ! -x "$TARGET" ]; then
  echo "bench.sh: building the debug binary to symbolicate ($TARGET)…" >&2
  swift build --product stackline >&2
fi
[ -x "$TARGET" ] || die "$TARGET is missing"

work="$(mktemp -d "${TMPDIR:-/tmp}/stackline-bench.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# Addresses: N instructions evenly spaced over .text, from objdump's disassembly, in a
# fixed shuffled order (the same every run).
"$OBJDUMP" -d --no-show-raw-insn -j .text "$TARGET" \
  | awk '/^ +[0-9a-f]+:\t/ { sub(/:.*/, ""); gsub(/ /, ""); print "0x" $0 }' > "$work/all"
total=$(wc -l < "$work/all")
[ "$total" -ge "$N" ] || die "only $total instructions in .text of $TARGET (need $N)"
awk -v n="$N" -v t="$total" 'BEGIN { step = t / n } { if (NR - 1 >= next_pick && picked < n) { print; picked++; next_pick = picked * step } }' \
  "$work/all" | shuf --random-source=<(yes) > "$work/batch"   # crash addresses come in no order
awk -v n="$EU_N" -v t="$N" 'BEGIN { step = t / n } { if (NR - 1 >= next_pick && picked < n) { print; picked++; next_pick = picked * step } }' \
  "$work/batch" > "$work/eu-batch"
head -n 1 "$work/batch" > "$work/one"
n_batch=$(wc -l < "$work/batch"); n_eu=$(wc -l < "$work/eu-batch")

build_id="$("$READELF" -n "$TARGET" 2>/dev/null | awk '/Build ID:/ { print $NF; exit }')"
[ -n "$build_id" ] || die "$TARGET has no GNU build-id"
# Storing builds the symcache beside the file: timed, as symbolic's SymCache build is below.
add_started=$(date +%s.%N)
"$STACKLINE" symbols add --symbols "$work/store" "$TARGET" > /dev/null
add_seconds=$(awk -v a="$add_started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
symcache_bytes=$(stat -c %s "$work/store/.build-id/${build_id:0:2}/${build_id:2}.symcache" 2>/dev/null || echo 0)

now() { date +%s.%N; }
# time_run OUTFILE CMD... < input : prints elapsed seconds; fails loudly if CMD fails.
time_run() {
  local out="$1"; shift
  local t0 t1
  t0=$(now)
  "$@" > "$out" 2> "$out.err" || { cat "$out.err" >&2; die "failed: $*"; }
  t1=$(now)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }'
}

sl=("$STACKLINE" lookup --symbols "$work/store" --build-id "$build_id")
ll=("$LLVM_SYMBOLIZER" "--obj=$TARGET" -i -f -C)
# eu-addr2line exits 1 when some address has no answer; that is not a failure here.
eu_addr2line() { "$EU_ADDR2LINE" "$@" || [ $? -eq 1 ]; }
eu=(eu_addr2line -e "$TARGET" -i -f -C)

echo "target: $TARGET ($(du -h "$TARGET" | cut -f1), $total instructions in .text, build-id $build_id)"
echo "batch: $n_batch addresses (eu-addr2line: $n_eu of them)"
echo "symbols add (store + symcache): $add_seconds s; symcache $(awk -v b="$symcache_bytes" 'BEGIN { printf "%.1f MB", b / 1e6 }')"
echo

sl_first=$(time_run "$work/sl1" "${sl[@]}" < "$work/one")
sl_batch=$(time_run "$work/slN" "${sl[@]}" < "$work/batch")
ll_first=$(time_run "$work/ll1" "${ll[@]}" < "$work/one")
ll_batch=$(time_run "$work/llN" "${ll[@]}" < "$work/batch")
# JSON output, each tool its own style (stackline --json, llvm-symbolizer --output-style=JSON).
slj_batch=$(time_run "$work/sljN" "${sl[@]}" --json < "$work/batch")
llj_batch=$(time_run "$work/lljN" "${ll[@]}" --output-style=JSON < "$work/batch")
eu_first=$(time_run "$work/eu1" "${eu[@]}" < "$work/one")
eu_batch=$(time_run "$work/euN" "${eu[@]}" < "$work/eu-batch")

# Sanity: every tool answered every address (text output: one blank line per address
# for Stackline and llvm-symbolizer; eu-addr2line prints no separators, so count nothing).
sl_answers=$(grep -c '^$' "$work/slN" || true)
ll_answers=$(grep -c '^$' "$work/llN" || true)
[ "$sl_answers" -eq "$n_batch" ] || echo "warning: stackline printed $sl_answers answers for $n_batch addresses" >&2
[ "$ll_answers" -eq "$n_batch" ] || echo "warning: llvm-symbolizer printed $ll_answers answers for $n_batch addresses" >&2

awk -v slf="$sl_first" -v slb="$sl_batch" -v llf="$ll_first" -v llb="$ll_batch" \
    -v euf="$eu_first" -v eub="$eu_batch" -v n="$n_batch" -v neu="$n_eu" -v sljb="$slj_batch" -v lljb="$llj_batch" '
function rate(count, secs) { return secs > 0 ? count / secs : 0 }
function steady(count, batch, first) { d = batch - first; return d > 0 ? count / d : 0 }
BEGIN {
  slr = rate(n, slb);  sls = steady(n, slb, slf)
  llr = rate(n, llb);  lls = steady(n, llb, llf)
  eur = rate(neu, eub); eus = steady(neu, eub, euf)
  printf "%-18s %14s %12s %16s %18s\n", "tool", "first lookup", "batch time", "batch addr/s", "steady addr/s"
  printf "%-18s %12.3f s %10.3f s %16.0f %18.0f\n", "stackline", slf, slb, slr, sls
  printf "%-18s %12.3f s %10.3f s %16.0f %18.0f\n", "llvm-symbolizer", llf, llb, llr, lls
  printf "%-18s %12.3f s %10.3f s %16.0f %18.0f   (%d addresses)\n", "eu-addr2line", euf, eub, eur, eus, neu
  print ""
  printf "stackline / llvm-symbolizer: %.2fx (batch), %.2fx (steady state)\n", llr ? slr / llr : 0, lls ? sls / lls : 0
  printf "stackline / eu-addr2line:    %.2fx (batch), %.2fx (steady state)\n", eur ? slr / eur : 0, eus ? sls / eus : 0
  sljr = rate(n, sljb); lljr = rate(n, lljb)
  printf "JSON output: stackline --json %.0f addr/s, llvm-symbolizer --output-style=JSON %.0f addr/s: %.2fx (batch)\n", sljr, lljr, lljr ? sljr / lljr : 0
  printf "first lookup (1 address, includes process start and index build): stackline %.3f s, llvm-symbolizer %.3f s, eu-addr2line %.3f s\n", slf, llf, euf
}'

# Sentry's symbolic (PyPI, into .build/bench-venv): its SymCache over the same binary and the
# same addresses. Its native rate is symbolic_symcache_lookup called through cffi in a loop
# that makes no Python object per frame; the SymCache is built once, before timing (as its
# users keep it), so it is compared with Stackline's steady state.
bench_name=bench.sh
. "$root/scripts/bench/symbolic-venv.sh"
if [ -n "$symbolic_version" ]; then
  symbolic_line=$("$venv/bin/python" "$root/scripts/bench/symbolic-lookup.py" "$TARGET" "$work/batch")
  echo
  echo "symbolic $symbolic_version (SymCache): $symbolic_line"
  awk -v line="$symbolic_line" -v slf="$sl_first" -v slb="$sl_batch" -v n="$n_batch" '
  BEGIN {
    split(line, pairs, " "); for (i in pairs) { split(pairs[i], kv, "="); v[kv[1]] = kv[2] }
    d = slb - slf; sls = d > 0 ? n / d : 0
    printf "stackline steady / symbolic native lookups: %.2fx (%.0f vs %.0f addr/s)\n", v["native_rate"] ? sls / v["native_rate"] : 0, sls, v["native_rate"]
    printf "stackline steady / symbolic SymCache.lookup (Python loop): %.2fx (%.0f addr/s)\n", v["python_rate"] ? sls / v["python_rate"] : 0, v["python_rate"]
    printf "symbolic builds its SymCache in %.3f s; stackline'"'"'s first lookup (process start + index) takes %.3f s\n", v["symcache_build_s"], slf
  }'
fi

[ "${BENCH_BATCH_ONLY:-0}" = 1 ] && exit 0

echo
echo "== the same batch over a large -O2 C++ library =="
library="$(bash "$root/scripts/bench/boringssl-library.sh" "$work/lib")"
BENCH_BATCH_ONLY=1 BENCH_TARGET="$library" bash "$0"
echo "== back to $TARGET =="

# Cold: a new process answering 30 addresses of the stored file, CPU per run (median of
# BENCH_COLD_RUNS, default 1,000), against llvm-symbolizer doing the same (goal: <= 0.5x).
cold_runs="${BENCH_COLD_RUNS:-1000}"
head -n 30 "$work/batch" > "$work/thirty"
sl_cold=$(python3 "$root/scripts/bench/cold-cpu.py" "$cold_runs" "$work/thirty" -- "${sl[@]}")
ll_cold=$(python3 "$root/scripts/bench/cold-cpu.py" "$cold_runs" "$work/thirty" -- "${ll[@]}")
echo
echo "cold, 30 addresses in a new process (CPU per run, $cold_runs runs): stackline $sl_cold; llvm-symbolizer $ll_cold"
awk -v a="$sl_cold" -v b="$ll_cold" 'BEGIN {
  split(a, x, "[ =]"); split(b, y, "[ =]")
  printf "stackline / llvm-symbolizer cold CPU (median): %.2fx (goal: <= 0.5x)\n", (y[2] > 0 ? x[2] / y[2] : 0)
}'

echo
echo "== scripts/bench-parse.sh =="
bash "$root/scripts/bench-parse.sh"

# The job queue: the demo's 7-frame crash, then 30-frame crashes compared with the lookup-only
# limit (this run's batch rate / frames per report).
echo
echo "== scripts/bench-queue.sh =="
bash "$root/scripts/bench-queue.sh"
echo
echo "== scripts/bench-queue.sh, 30-frame reports =="
sl_rate=$(awk -v n="$n_batch" -v b="$sl_batch" 'BEGIN { printf "%.0f", (b > 0 ? n / b : 0) }')
# 20,000 reports: the queue's steady state, as a service drains it (with 5,000 the master's and
# workers' start was a sixth of the time measured).
BENCH_QUEUE_DEPTH=26 BENCH_LOOKUP_RATE=$sl_rate bash "$root/scripts/bench-queue.sh" 20000
echo; echo "== scripts/bench-queue-store.sh (the job store alone) =="; bash "$root/scripts/bench-queue-store.sh"

# `stackline serve` ingest under wrk: accepted reports/s and p99 latency.
echo
echo "== scripts/bench-serve.sh =="
bash "$root/scripts/bench-serve.sh"

# Remote workers (`stackline-worker --connect`, each on a network namespace of its own) against
# local ones: reports/s of each and their ratio.
echo
echo "== scripts/bench-remote.sh =="
bash "$root/scripts/bench-remote.sh"

# Two `serve` nodes on one PostgreSQL database against one (issue 33 §4): ingest through nginx
# and the queue drained, as ratios and CPU per report.
echo
echo "== scripts/bench-nodes.sh =="
bash "$root/scripts/bench-nodes.sh"

# What building a symcache costs against symbolic and GSYM (time, size, peak RSS), on the same two
# targets, and the first crash of a new build: upload, then one report, until it is symbolicated.
echo
echo "== scripts/bench-symcache-build.sh =="
BENCH_TARGET="$TARGET" BENCH_SYMCACHE_LIBRARY="$library" bash "$root/scripts/bench-symcache-build.sh"

# Triage at scale: appBoot launches per second through the SDK endpoint, and the release-health,
# group and facet queries over a million launches and 100,000 reports.
echo
echo "== scripts/bench-triage.sh =="
bash "$root/scripts/bench-triage.sh"
echo "== scripts/bench-reads.sh =="
bash "$root/scripts/bench-reads.sh"
