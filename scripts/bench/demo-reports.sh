# Sourced by the queue benchmarks (bench-queue.sh, bench-nodes.sh):
#   demo_reports STACKLINE DEMO OUT N
# stores the DWARF of the demo binary DEMO and the Swift runtime libraries' symbol tables
# (`symbols add` into $STACKLINE_SYMBOLS, symcaches built now, so a measurement starts warm:
# real symbolication work per job), crashes DEMO for the Swift runtime's own JSON crash report
# (unsymbolicated), and writes N variants of it to OUT/in/rNNNNNN.json, each with one extra
# top-level field, so each is a distinct report.
demo_reports() {
  local stackline=$1 demo=$2 out=$3 n=$4 runtime_dir report i
  runtime_dir=$(swiftc -print-target-info | sed -n '/"runtimeLibraryPaths"/,/]/p' | grep -o '"/[^"]*"' | head -1 | tr -d '"')
  "$stackline" symbols add "$demo" "$runtime_dir/libswiftCore.so" "$runtime_dir/libswiftSwiftOnoneSupport.so" >/dev/null
  (SWIFT_BACKTRACE="enable=yes,symbolicate=off,format=json,output-to=$out/crash.json" "$demo" >/dev/null 2>&1 || true) 2>/dev/null
  [ -s "$out/crash.json" ] || { echo "the demo wrote no crash report" >&2; return 1; }
  # bash builtins only: no process per file.
  report=$(<"$out/crash.json")
  mkdir -p "$out/in"
  for ((i = 0; i < n; i++)); do
    printf '%s' "${report/\{/\{\"benchVariant\": $i, }" >"$out/in/$(printf 'r%06d.json' "$i")"
  done
}
