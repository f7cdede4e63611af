#!/usr/bin/env bash
# What building a symcache costs, against the anchors, in the same run (issue 31): for each debug
# file, `stackline symbols add` into an empty store (which builds the symcache), symbolic's SymCache
# conversion (PyPI, the venv scripts/bench.sh makes) and `llvm-gsymutil-14 --convert` (GSYM), each
# a whole process timed by /usr/bin/time (the median of BENCH_REPEAT runs, default 3): wall and
# CPU seconds, peak RSS, and the output's size.
# Prints the issue's ratios with their goals (met or not; nothing fails on a goal) and the table as
# docs/performance.md keeps it. Then the first crash of a new build (below): `symbols upload` of the
# Swift binary to a release `serve`, one crash of it posted, and the time until
# GET /api/v1/reports/{id} answers symbolicated, beside the upload's own.
#
#   scripts/bench-symcache-build.sh [DEBUG_FILE…]
#
# Debug files, when none is named: the Swift debug binary scripts/bench.sh symbolicates (BENCH_TARGET,
# default .build/debug/stackline, built when missing), copied first so a concurrent build cannot
# change it mid-run; BoringSSL (-O2 C++, scripts/bench/boringssl-library.sh, from the release
# build's objects: what bench.sh's second target is; BENCH_SYMCACHE_LIBRARY gives one already
# linked); and the libpython3.11 of the python3.11 on PATH when it carries DWARF (C, -O3: the
# issue's own second row; pyenv builds it with -g).
# Environment: BENCH_BIN_DIR (stackline and stackline-worker to time; default .build/release),
# BENCH_REPEAT (runs of each conversion, the median reported; default 3),
# BENCH_FIRST_CRASH=0 (skip the first-crash part).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
export PATH="$PATH:/opt/swift/usr/bin"

die() { echo "bench-symcache-build.sh: $*" >&2; exit 1; }
if [ -n "${BENCH_BIN_DIR:-}" ]; then
  bin=$BENCH_BIN_DIR   # another build's stackline, to compare two builds
elif [ -x .build/release/stackline ]; then
  bin=.build/release
else
  die ".build/release/stackline is missing: run 'swift build -c release' (make bench does) or set BENCH_BIN_DIR"
fi
[ -x "$bin/stackline" ] || die "$bin/stackline is missing"
GSYMUTIL="$(command -v llvm-gsymutil-14 || command -v llvm-gsymutil || true)"
[ -n "$GSYMUTIL" ] || die "llvm-gsymutil-14 is missing (Debian's llvm-14: scripts/install-deps.sh)"
[ -x /usr/bin/time ] || die "/usr/bin/time is missing (Debian's time)"

work="$(mktemp -d "${TMPDIR:-/tmp}/stackline-bench.XXXXXX")"
trap 'rm -rf "$work"' EXIT
# `symbols add` also records the file in a job database: a scratch one, not ./data.
export STACKLINE_DB="$work/stackline.sqlite"

# The venv and the symbolic in it are scripts/bench.sh's.
bench_name=bench-symcache-build.sh
. "$root/scripts/bench/symbolic-venv.sh"

targets=("$@")
labels=()
if [ ${#targets[@]} -eq 0 ]; then
  swift_target="${BENCH_TARGET:-$root/.build/debug/stackline}"
  if [ ! -x "$swift_target" ]; then
    echo "bench-symcache-build.sh: building the Swift debug binary ($swift_target)…" >&2
    swift build --product stackline >&2
  fi
  mkdir -p "$work/swift"
  cp "$swift_target" "$work/swift/$(basename "$swift_target")"
  targets+=("$work/swift/$(basename "$swift_target")"); labels+=("Swift debug binary")
  if [ -n "${BENCH_SYMCACHE_LIBRARY:-}" ]; then
    targets+=("$BENCH_SYMCACHE_LIBRARY"); labels+=("BoringSSL (C++, -O2)")
  elif [ -d .build/release/CNIOBoringSSL.build ]; then
    targets+=("$(bash "$root/scripts/bench/boringssl-library.sh" "$work/lib")"); labels+=("BoringSSL (C++, -O2)")
  else
    echo "BoringSSL skipped: .build/release/CNIOBoringSSL.build is missing (swift build -c release makes it)"
  fi
  libpython=$(python3.11 -c 'import sysconfig; v = sysconfig.get_config_var; print(v("LIBDIR") + "/" + v("INSTSONAME"))' 2>/dev/null || true)
  if [ -n "$libpython" ] && [ -f "$libpython" ] && readelf -S -W "$libpython" 2>/dev/null | grep -q ' \.debug_info '; then
    targets+=("$libpython"); labels+=("libpython3.11 (C, -O3)")
  else
    echo "libpython3.11 skipped: no python3.11 on PATH whose libpython3.11 has DWARF"
  fi
else
  for t in "${targets[@]}"; do labels+=("$(basename "$t")"); done
fi

# measure NAME OUT CMD…: runs CMD under /usr/bin/time BENCH_REPEAT times (default 3; output and
# errors to $work/NAME.log), each time after removing OUT and the paths in $reset, and prints
# "wall cpu peak_kb out_bytes" of the run with the median wall time: one run of a second or two
# moved by a third on this shared machine. "- - - -" when CMD failed (its log is shown).
reset=""
measure() {
  local name=$1 out=$2; shift 2
  local runs=() i
  for ((i = 0; i < ${BENCH_REPEAT:-3}; i++)); do
    # shellcheck disable=SC2086
    rm -rf "$out" $reset
    if /usr/bin/time -f '%e %U %S %M' -o "$work/$name.time" "$@" >"$work/$name.log" 2>&1 && [ -s "$out" ]; then
      runs+=("$(tail -n 1 "$work/$name.time" | awk -v size="$(stat -c %s "$out")" '{ printf "%s %.2f %s %s\n", $1, $2 + $3, $4, size }')")
    else
      echo "bench-symcache-build.sh: $name failed:" >&2; tail -n 5 "$work/$name.log" >&2
      echo "- - - -"
      return
    fi
  done
  printf '%s\n' "${runs[@]}" | sort -n -k1,1 | awk '{ line[NR] = $0 } END { print line[int((NR + 1) / 2)] }'
}

symbolic_py='
import sys, time
from symbolic import Archive
started = time.perf_counter()
symcache = next(Archive.open(sys.argv[1]).iter_objects()).make_symcache()
with open(sys.argv[2], "wb") as out:
    symcache.dump_into(out)
print(f"conversion {time.perf_counter() - started:.3f}")
'

rows=()
for i in "${!targets[@]}"; do
  file=${targets[$i]}; label=${labels[$i]}
  [ -f "$file" ] || die "$file is missing"
  size=$(stat -c %s "$file")
  build_id=$(readelf -n "$file" 2>/dev/null | awk '/Build ID:/ { print $NF; exit }')
  [ -n "$build_id" ] || die "$file has no GNU build-id"
  echo
  echo "== $label: $file ($(awk -v b="$size" 'BEGIN { printf "%.1f MB", b / 1e6 }'), build-id $build_id)"
  rm -rf "$work/store"
  # Read once first: the tool timed first would otherwise pay the disk reads the others do not.
  # And written-back: dirty pages left by what ran before (an earlier run's store, its server)
  # would otherwise throttle the writes of whichever tool comes next.
  cat "$file" >/dev/null
  sync
  reset="$work/store"
  sl=$(measure "stackline-$i" "$work/store/.build-id/${build_id:0:2}/${build_id:2}.symcache" \
    "$bin/stackline" symbols add --symbols "$work/store" "$file")
  reset=""
  sy="- - - -"; sy_conv="-"
  if [ -n "$symbolic_version" ]; then
    sy=$(measure "symbolic-$i" "$work/symbolic-$i.symcache" "$venv/bin/python" -c "$symbolic_py" "$file" "$work/symbolic-$i.symcache")
    sy_conv=$(awk '/^conversion / { print $2 }' "$work/symbolic-$i.log")
  fi
  gs=$(measure "gsym-$i" "$work/gsym-$i.gsym" "$GSYMUTIL" --convert "$file" --out-file "$work/gsym-$i.gsym")
  rm -rf "$work/store" "$work/symbolic-$i.symcache" "$work/gsym-$i.gsym"

  awk -v sl="$sl" -v sy="$sy" -v gs="$gs" -v size="$size" -v syv="${symbolic_version:-?}" -v syc="${sy_conv:-?}" \
      -v gsname="$(basename "$GSYMUTIL")" '
  function mb(b) { return sprintf("%.1f MB", b / 1e6) }
  function line(name, m, what) {
    if (m[1] == "-") { printf "%-28s failed\n", name; return }
    printf "%-28s %8.2f s %8.2f s %9s %11s %s\n", name, m[1], m[2], mb(m[3] * 1024), mb(m[4]), what
  }
  # goal(ratio, bound, text): "1.23x (goal <= 1.0x: met)"; "-" when a side is missing.
  function goal(a, b, bound, text) {
    if (a == "-" || b == "-" || b <= 0) return "- (" text ")"
    r = a / b
    return sprintf("%.2fx (goal %s: %s)", r, text, r <= bound ? "met" : "not met")
  }
  BEGIN {
    split(sl, s, " "); split(sy, y, " "); split(gs, g, " ")
    printf "%-28s %10s %10s %9s %11s\n", "", "wall", "CPU", "peak RSS", "output"
    line("stackline symbols add", s, "symcache")
    line("symbolic " syv " SymCache", y, "(conversion alone " syc " s)")
    line(gsname " --convert", g, "GSYM")
    printf "build time: %s; %s\n", goal(s[1], y[1], 1.0, "<= 1.0x symbolic"), goal(s[1], g[1], 1.5, "<= 1.5x GSYM")
    printf "size:       %s; %s\n", goal(s[4], y[4], 1.0, "<= 1.0x symbolic"), goal(s[4], g[4], 2.0, "<= 2x GSYM")
    if (s[3] != "-") printf "peak RSS of building: %s, %s\n", mb(s[3] * 1024), goal(s[3] * 1024, size, 2.0, "< 2x the debug file, " mb(size))
  }'
  rows+=("$label, $(awk -v b="$size" 'BEGIN { printf "%.0f MB", b / 1e6 }')|$sl|$sy|$gs")
done

echo
echo "| Debug file | Stackline \`symbols add\` (symcache built), peak RSS | symbolic ${symbolic_version:-?} \`SymCache\` convert | \`$(basename "$GSYMUTIL") --convert\` (GSYM) |"
echo "|---|---|---|---|"
for row in "${rows[@]}"; do
  awk -v row="$row" 'BEGIN {
    split(row, p, "|"); split(p[2], s, " "); split(p[3], y, " "); split(p[4], g, " ")
    cell_s = s[1] == "-" ? "failed" : sprintf("%.2f s, symcache %.1f MB, %.2f GB peak", s[1], s[4] / 1e6, s[3] * 1024 / 1e9)
    cell_y = y[1] == "-" ? "-" : sprintf("%.2f s, %.1f MB", y[1], y[4] / 1e6)
    cell_g = g[1] == "-" ? "-" : sprintf("%.2f s, %.1f MB", g[1], g[4] / 1e6)
    printf "| %s | %s | %s | %s |\n", p[1], cell_s, cell_y, cell_g
  }'
done

# The first crash of a new build: a release `serve` (2 workers) with an empty store and database;
# the Swift debug binary uploaded with `symbols upload` (its symcache is then built in the
# background), then one crash report of that binary posted, and GET /api/v1/reports/{id} polled
# until it answers with the binary's frames named. The crash: the copied binary's own `serve`
# (its NIO threads run Stackline's code) killed with SIGABRT under the Swift runtime's backtracer.
# BENCH_FIRST_CRASH=0 skips this part; it needs the Swift binary (no DEBUG_FILE arguments).
[ "${BENCH_FIRST_CRASH:-1}" = 1 ] && [ -n "${swift_target:-}" ] || exit 0
app="${targets[0]}"
echo
echo "== the first crash of a new build: $(basename "$app") ($(awk -v b="$(stat -c %s "$app")" 'BEGIN { printf "%.1f MB", b / 1e6 }')) uploaded, then a crash of it posted"
source "$root/scripts/serve-scratch.sh"
crashing=
trap 'serve_stop; [ -z "$crashing" ] || kill -KILL "$crashing" 2>/dev/null; rm -rf "$work"' EXIT

mkdir -p "$work/crashing/symbols"
crash_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
STACKLINE_DB="$work/crashing/db.sqlite" STACKLINE_SYMBOLS="$work/crashing/symbols" STACKLINE_WORKER="$bin/stackline-worker" \
  SWIFT_BACKTRACE="enable=yes,symbolicate=off,format=json,output-to=$work/crash.json" \
  "$app" serve --listen "127.0.0.1:$crash_port" --workers 0 >"$work/crashing/serve.log" 2>&1 &
crashing=$!
for _ in $(seq 1 600); do
  curl -sf "http://127.0.0.1:$crash_port/healthz" >/dev/null && break
  kill -0 "$crashing" 2>/dev/null || break
  sleep 0.1
done
kill -ABRT "$crashing" 2>/dev/null || true
# A signal sent from outside is not re-raised by a faulting instruction once the backtracer's
# handler returns, so the process lives on: it is killed once its report is whole.
for _ in $(seq 1 600); do
  python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$work/crash.json" 2>/dev/null && break
  kill -0 "$crashing" 2>/dev/null || break
  sleep 0.1
done
# Braced: bash's "Killed" notice goes to the shell's stderr, not to the builtins'.
{ kill -KILL "$crashing"; wait "$crashing"; } 2>/dev/null || true
crashing=
grep -q '"threads"' "$work/crash.json" 2>/dev/null || { cat "$work/crashing/serve.log" >&2; die "the crashing serve wrote no crash report"; }

export STACKLINE_DB="$work/server.sqlite" STACKLINE_SYMBOLS="$work/server-symbols"
mkdir -p "$STACKLINE_SYMBOLS"
symbols_token=$("$bin/stackline" tokens create --scope symbols --name bench 2>/dev/null)
ingest_token=$("$bin/stackline" tokens create --scope ingest --name bench 2>/dev/null)
read_token=$("$bin/stackline" tokens create --scope read --name bench 2>/dev/null)
serve_start "$bin/stackline" --workers 2 --log-level warning

now() { date +%s.%N; }
t0=$(now)
STACKLINE_TOKEN=$symbols_token "$bin/stackline" symbols upload --server "$base" "$app" >"$work/upload.log" 2>&1 \
  || { cat "$work/upload.log" >&2; die "symbols upload failed"; }
t1=$(now)
id=$(curl -sf -H "Authorization: Bearer $ingest_token" --data-binary @"$work/crash.json" "$base/api/v1/reports" \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
t2=$(now)
# Symbolicated: a result (409 until there is one) with the binary's frames symbolicated.
named=0
for _ in $(seq 1 6000); do
  code=$(curl -s -o "$work/report.json" -w '%{http_code}' -H "Authorization: Bearer $read_token" "$base/api/v1/reports/$id?format=json")
  if [ "$code" = 200 ]; then
    named=$(python3 - "$work/report.json" "$(basename "$app")" <<'PY'
import json, sys
report, image = json.load(open(sys.argv[1])), sys.argv[2]
def frames(node):
    if isinstance(node, dict):
        if "status" in node and "image" in node: yield node
        for value in node.values(): yield from frames(value)
    elif isinstance(node, list):
        for value in node: yield from frames(value)
print(sum(1 for f in frames(report) if f["image"] == image and f["status"] == "symbolicated" and f.get("function")))
PY
)
    [ "$named" -gt 0 ] && break
  fi
  sleep 0.05
done
t3=$(now)
[ "$named" -gt 0 ] || { tail -n 20 "$work/serve.log" >&2; die "report $id was not symbolicated within 5 minutes (last answer $code)"; }
awk -v t0="$t0" -v t1="$t1" -v t2="$t2" -v t3="$t3" -v named="$named" 'BEGIN {
  up = t1 - t0; all = t3 - t0
  printf "upload (symbols upload, whole process):   %7.2f s\n", up
  printf "upload -> report symbolicated (GET 200):   %7.2f s   (post %.2f s, then %.2f s until answered; %d frames named)\n", all, t2 - t1, t3 - t2, named
  r = up > 0 ? all / up : 0
  printf "first crash / upload: %.2fx (goal <= 2x: %s)\n", r, (r > 0 && r <= 2) ? "met" : "not met"
}'
