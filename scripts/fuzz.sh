#!/usr/bin/env bash
# Builds the libFuzzer harness and runs fuzz targets one after another (docs/fuzzing.md).
#
#   scripts/fuzz.sh [--smoke] [TARGET...]      (no TARGET: every target)
#   scripts/fuzz.sh --replay [TARGET...]       (what `make test` runs)
#
# --replay runs every seed of every target once through the plain harness of the debug build
# (`.build/debug/stackline-fuzz`, built with the tests), without libFuzzer: the seeds keep
# passing, at no cost of a build of its own. The libFuzzer harness is a release build of the
# whole package with -sanitize=fuzzer, which took longer than the rest of CI together; it is
# built by `make fuzz` and --smoke.
#
# FUZZ_SECONDS   seconds per target (default 60; --smoke: 3)
# FUZZ_NICE      niceness of the fuzzer processes (default 10)
#
# Everything goes under .build-fuzz/:
#   release/stackline-fuzz   the harness (-sanitize=fuzzer)
#   seeds/{elf,zip}          seeds built from the test fixtures (the rest are read in place)
#   corpus/TARGET            the corpus libFuzzer grows; kept across runs (not by --smoke)
#   crashes/TARGET           crash-*, timeout-*, oom-* inputs: copy them to Tests/Fixtures/fuzz-crashes/TARGET
#   logs/TARGET.log          libFuzzer's output, final stats included
# Exits 1 if any target left a crash, timeout or out-of-memory input.
set -euo pipefail
cd "$(dirname "$0")/.."

smoke=0
replay=0
if [ "${1:-}" = "--smoke" ]; then smoke=1; shift; fi
if [ "${1:-}" = "--replay" ]; then replay=1; shift; fi
seconds="${FUZZ_SECONDS:-$([ $smoke = 1 ] && echo 3 || echo 60)}"
niceness="${FUZZ_NICE:-10}"
out=.build-fuzz
swift="${SWIFT:-swift}"

mkdir -p "$out"
if [ $replay = 1 ]; then
  # Already built by the tests' build: this only checks it is current (its output is noise then).
  # STACKLINE_PREBUILT=1 (scripts/test.sh, beside a running `swift test`): use it as it is.
  if [ "${STACKLINE_PREBUILT:-0}" != 1 ]; then
    "$swift" build --product stackline-fuzz >"$out/replay-build.log" 2>&1 || { cat "$out/replay-build.log" >&2; exit 2; }
  fi
  fuzzer=.build/debug/stackline-fuzz
else
  # SwiftPM links every executable with --defsym main=…, which gold cannot combine with
  # libFuzzer's own main (it fails with an internal error); lld can.
  swiftc="$(command -v swiftc)"
  lld="$(dirname "$(readlink -f "$swiftc")")/ld.lld"
  [ -x "$lld" ] || lld="$(command -v ld.lld || true)"
  if [ -z "$lld" ] || [ ! -x "$lld" ]; then
    echo "fuzz.sh: ld.lld not found next to swiftc or on PATH" >&2
    exit 2
  fi
  printf '{"schemaVersion": "1.0", "linker": {"path": "%s"}}\n' "$lld" >"$out/toolset.json"
  nice -n "$niceness" "$swift" build -c release --scratch-path "$out" --product stackline-fuzz \
    --toolset "$out/toolset.json" -Xswiftc -sanitize=fuzzer -Xswiftc -DSTACKLINE_LIBFUZZER
  # Run a private copy, so a rebuild during a long run changes nothing under it.
  fuzzer="$out/stackline-fuzz.run.$$"
  cp "$out/release/stackline-fuzz" "$fuzzer"
  trap 'rm -f "$fuzzer"' EXIT
fi

# Seeds that are not files in the repository: ELF files from the accuracy fixtures' build
# (the small ones; big seeds slow every mutation) and zips of fixtures as `symbols add` takes them.
if [ ! -f "$out/seeds/.complete" ]; then
  rm -rf "$out/seeds"
  mkdir -p "$out/seeds/elf" "$out/seeds/zip" "$out/seeds/elf-build"
  Tests/Fixtures/build-elf-fixtures.sh "$out/seeds/elf-build" >/dev/null
  find "$out/seeds/elf-build" -maxdepth 1 -type f -size -64k ! -name '*.tsv' -exec cp {} "$out/seeds/elf/" \;
  (cd Tests/Fixtures/macho && zip -qr "$OLDPWD/$out/seeds/zip/dylib-dsym.zip" libgeometry.dylib.dSYM \
    && zip -qr "$OLDPWD/$out/seeds/zip/fat-dsym.zip" Sample.dSYM)
  (cd "$out/seeds/elf" && zip -q ../zip/elf-pair.zip c-gcc-pie.debug c-gcc-pie.stripped)
  rm -rf "$out/seeds/elf-build"
  touch "$out/seeds/.complete"
fi

# gzip and zlib bodies for the inflate target: real reports compressed by the system's gzip and
# Python's zlib, two gzip members end to end, and a gzip with trailing zero padding.
if [ ! -f "$out/seeds/inflate/.complete" ]; then
  mkdir -p "$out/seeds/inflate"
  gzip -c Tests/Fixtures/wild/ips/multithread-test.ips >"$out/seeds/inflate/report.gz"
  cat "$out/seeds/inflate/report.gz" "$out/seeds/inflate/report.gz" >"$out/seeds/inflate/two-members.gz"
  { cat "$out/seeds/inflate/report.gz"; head -c 16 /dev/zero; } >"$out/seeds/inflate/padded.gz"
  python3 -c 'import sys, zlib; sys.stdout.buffer.write(zlib.compress(open(sys.argv[1], "rb").read()))' \
    Tests/Fixtures/wild/ips/multithread-test.ips >"$out/seeds/inflate/report.zlib"
  touch "$out/seeds/inflate/.complete"
fi

# intake-to-page: hostile numbers in every numeric field of every format, issue 28's F1 and F2,
# gzip bodies and SDK batches, derived from the fixtures (deterministic; rewritten when the script changes).
gen=Tests/Fixtures/fuzz-seeds/intake-to-page-seeds.py
if [ ! -f "$out/seeds/intake-to-page/.complete" ] || [ "$gen" -nt "$out/seeds/intake-to-page/.complete" ]; then
  rm -rf "$out/seeds/intake-to-page"
  python3 "$gen" "$out/seeds/intake-to-page" >/dev/null
  touch "$out/seeds/intake-to-page/.complete"
fi

seeds_for() {
  local f=Tests/Fixtures
  case "$1" in
    swift-backtrace-json | swift-backtrace-text | sdk-lag | frame | search-query | minidump | elf-core) echo "$f/fuzz-seeds/$1" ;;
    native-unwind) echo "$f/fuzz-seeds/minidump $f/fuzz-seeds/elf-core" ;;
    swift-backtrace-decoders) echo "$f/fuzz-seeds/swift-backtrace-json $f/wild/swift-backtrace" ;;
    android-tombstone) echo "$f/fuzz-seeds/android-tombstone $f/wild/android" ;;
    sanitizer) echo "$f/wild/asan" ;;
    metrickit) echo "$f/wild/metrickit" ;;
    kscrash) echo "$f/wild/kscrash" ;;
    apple-ips | apple-ips-decoders) echo "$f/wild/ips" ;;
    apple-crash | apple-ips-legacy) echo "$f/wild/apple-crash" ;;
    intake-to-page) echo "$f/fuzz-seeds/intake-to-page $out/seeds/intake-to-page $f/wild $f/fuzz-seeds/swift-backtrace-json $f/fuzz-seeds/swift-backtrace-text $f/fuzz-seeds/sdk-lag $f/fuzz-seeds/android-tombstone $f/fuzz-seeds/minidump $f/fuzz-seeds/elf-core" ;;
    detect-and-parse) echo "$f/wild $f/fuzz-seeds/swift-backtrace-json $f/fuzz-seeds/swift-backtrace-text $f/fuzz-seeds/sdk-lag $f/fuzz-seeds/android-tombstone $f/fuzz-seeds/minidump $f/fuzz-seeds/elf-core" ;;
    elf) echo "$out/seeds/elf" ;;
    mach-o) echo "$f/macho" ;;
    zip) echo "$out/seeds/zip" ;;
    inflate) echo "$out/seeds/inflate" ;;
    # Symcaches of the Mach-O fixtures (SymbolCacheSeedTests writes them: STACKLINE_WRITE_SYMCACHE_SEEDS=1).
    symcache) echo "$f/fuzz-seeds/symcache" ;;
    *) echo "fuzz.sh: no seeds for target $1" >&2 ;;
  esac
}

targets=("$@")
[ ${#targets[@]} -eq 0 ] && mapfile -t targets < <("$fuzzer" --list | cut -f1)

if [ $replay = 1 ]; then
  found=0
  printf '%-24s %8s %8s  %s\n' target inputs seconds result
  for target in "${targets[@]}"; do
    log="$out/logs/$target.replay.log"
    mkdir -p "$out/logs" "$out/tmp"
    start=$(date +%s)
    status=0
    # shellcheck disable=SC2046
    SWIFT_BACKTRACE=enable=no TMPDIR="$out/tmp" nice -n "$niceness" timeout 600 "$fuzzer" "$target" $(seeds_for "$target") >"$log" 2>&1 || status=$?
    inputs=$(grep -c "^$target " "$log" || true)
    result=ok
    if [ $status -ne 0 ]; then
      found=1
      result="failed (exit $status, see $log)"
    fi
    printf '%-24s %8s %8s  %s\n' "$target" "$inputs" "$(($(date +%s) - start))" "$result"
    if [ $status -ne 0 ]; then
      grep -E "FAILED|Fatal error|cannot read" "$log" | head -20 | sed 's/^/    | /' || true
      tail -20 "$log" | sed 's/^/    | /'
    fi
  done
  exit $found
fi

found=0
printf '%-24s %12s %8s %8s  %s\n' target executions seconds corpus findings
for target in "${targets[@]}"; do
  crashes="$out/crashes/$target"
  corpus="$out/corpus/$target"
  scratch="$out/tmp/$target.$$"
  log="$out/logs/$target.log"
  mkdir -p "$crashes" "$out/logs"
  rm -rf "$scratch" && mkdir -p "$scratch"
  if [ $smoke = 1 ]; then
    # Seeds only, a fixed seed, and stop at the first finding.
    corpus="$scratch/corpus"
    log="$out/logs/$target.smoke.log"
    extra=(-seed=1)
  else
    # Keep going past a finding (each one is saved), so one run reports every kind it meets.
    extra=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  fi
  mkdir -p "$corpus"
  before=$(find "$crashes" -type f | wc -l)
  started="$out/tmp/$target.$$.started"
  touch "$started"
  start=$(date +%s)
  # The Swift runtime's backtracer would claim the crash signals before libFuzzer, which
  # then never saves the input: turn it off.
  # shellcheck disable=SC2046
  SWIFT_BACKTRACE=enable=no STACKLINE_FUZZ_TARGET="$target" TMPDIR="$scratch" nice -n "$niceness" "$fuzzer" \
    -max_total_time="$seconds" -rss_limit_mb=1024 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$crashes/" "${extra[@]}" "$corpus" $(seeds_for "$target") >"$log" 2>&1 || true
  # On a crash libFuzzer stops before its final stats; its last status line has the count.
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  [ -n "$runs" ] || runs=$(sed -n 's/^#\([0-9][0-9]*\).*/\1/p' "$log" | tail -1)
  elapsed=$(($(date +%s) - start))
  after=$(find "$crashes" -type f | wc -l)
  new=$((after - before))
  findings="none"
  if [ "$new" -gt 0 ] || grep -q -E '^==[0-9]+== ERROR: libFuzzer|^SUMMARY: libFuzzer' "$log"; then
    found=1
    findings="$new new in $crashes/ (see $log)"
  elif [ -z "$runs" ]; then
    found=1
    findings="the fuzzer did not finish (see $log)"
  fi
  printf '%-24s %12s %8s %8s  %s\n' "$target" "${runs:-?}" "$elapsed" "$(find "$corpus" -type f | wc -l)" "$findings"
  if [ "$findings" != none ]; then
    # CI keeps only what is printed: the crash report and each new input (base64, up to 16 KiB),
    # so a finding on a machine that is gone can still be replayed here.
    grep -E -A40 '^==[0-9]+== ERROR|Fatal error|deadly signal|^stackline-fuzz ' "$log" | head -60 | sed 's/^/    | /' || true
    find "$crashes" -type f -newer "$started" | while read -r input; do
      echo "    input $(basename "$input") ($(wc -c <"$input") bytes, base64):"
      head -c 16384 "$input" | base64 -w 0 | sed 's/^/    /'
      echo
    done
  fi
  rm -rf "$scratch" "$started"
done
exit $found
