#!/usr/bin/env bash
# Builds the ELF accuracy fixtures into OUTDIR (nothing built here is committed).
#
#   Tests/Fixtures/build-elf-fixtures.sh OUTDIR
#
# For every fixture NAME it leaves:
#   OUTDIR/NAME           the unstripped binary (the oracles read this one)
#   OUTDIR/NAME.debug     objcopy --only-keep-debug of it
#   OUTDIR/NAME.stripped  the binary without debug info, with a .gnu_debuglink to NAME.debug
# and, outside the manifest, OUTDIR/c-gcc-pie.debug.zstd (its debug sections compressed with
# zstd: a seed of the elf fuzz target; llvm-symbolizer 14 cannot read it, so the accuracy
# tests compress their own copies, Tests/AccuracyTests/ZstdAccuracyTests.swift) and
# OUTDIR/c-gcc-pie.minidebuginfo (stripped, with Fedora's MiniDebugInfo: another elf seed),
# and writes OUTDIR/fixtures.tsv, one line per fixture, tab separated:
#   name  role  language  compiler  unstripped  stripped  debug  build-id  description
# role: accuracy (compare every .text instruction), crash (runs and crashes; load-address
# test), no-build-id (linked with --build-id=none; only NAME exists, build-id column is "-").
#
# Tools: gcc, g++, clang, clang++ (CLANG/CLANGXX override), swiftc, objcopy, strip, readelf, nm, xz.
# A missing tool is an error (exit 2) with a message naming it; nothing is skipped.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 64
fi
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$1"
out="$(cd "$1" && pwd)"

GCC="${GCC:-gcc}"
GXX="${GXX:-g++}"
CLANG="${CLANG:-clang}"
CLANGXX="${CLANGXX:-clang++}"
SWIFTC="${SWIFTC:-swiftc}"

missing=()
for tool in "$GCC" "$GXX" "$CLANG" "$CLANGXX" "$SWIFTC" objcopy strip readelf nm xz; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ ${#missing[@]} -ne 0 ]; then
  echo "build-elf-fixtures.sh: missing tool(s): ${missing[*]} (install with scripts/install-deps.sh; the Swift toolchain provides clang/swiftc)" >&2
  exit 2
fi

manifest="$out/fixtures.tsv"
: > "$manifest.tmp"

build_id() {
  readelf -n "$1" 2>/dev/null | awk '/Build ID:/ { print $NF; exit }'
}

# split NAME MODE: makes NAME.debug and NAME.stripped from NAME. MODE: debug|all
split_debug() {
  local name="$1" mode="$2"
  objcopy --only-keep-debug "$out/$name" "$out/$name.debug"
  if [ "$mode" = all ]; then
    strip --strip-all -o "$out/$name.stripped.tmp" "$out/$name"
    objcopy --add-gnu-debuglink="$out/$name.debug" "$out/$name.stripped.tmp" "$out/$name.stripped"
    rm -f "$out/$name.stripped.tmp"
  else
    objcopy --strip-debug --add-gnu-debuglink="$out/$name.debug" "$out/$name" "$out/$name.stripped"
  fi
}

# record NAME ROLE LANGUAGE COMPILER STRIPMODE DESCRIPTION
record() {
  local name="$1" role="$2" lang="$3" compiler="$4" stripmode="$5" desc="$6"
  local id
  id="$(build_id "$out/$name")"
  if [ -z "$id" ]; then
    echo "build-elf-fixtures.sh: $name has no GNU build-id" >&2
    exit 3
  fi
  split_debug "$name" "$stripmode"
  local id2
  id2="$(build_id "$out/$name.debug")"
  if [ "$id" != "$id2" ]; then
    echo "build-elf-fixtures.sh: $name.debug build-id $id2 differs from $id" >&2
    exit 3
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$role" "$lang" "$compiler" \
    "$out/$name" "$out/$name.stripped" "$out/$name.debug" "$id" "$desc" >> "$manifest.tmp"
}

run() {
  "$@" || { echo "build-elf-fixtures.sh: failed: $*" >&2; exit 1; }
}

C_SRC="$here/c/inlining.c"
CXX_SRC="$here/cpp/shapes.cpp"
SWIFT_SRC="$here/swift/main.swift"
BID="-Wl,--build-id"
# gcc splits unlikely paths into .text.unlikely (".cold" parts); say so explicitly.
GCC_COLD="-freorder-blocks-and-partition"

# ---- C, gcc
run "$GCC" -O2 -g $GCC_COLD -fPIE -pie $BID -o "$out/c-gcc-pie" "$C_SRC"
record c-gcc-pie accuracy c gcc debug "C -O2 gcc PIE, DWARF 5"
run "$GCC" -O2 -gdwarf-4 $GCC_COLD -fPIE -pie $BID -o "$out/c-gcc-pie-dwarf4" "$C_SRC"
record c-gcc-pie-dwarf4 accuracy c gcc debug "C -O2 gcc PIE, DWARF 4"
run "$GCC" -O2 -g $GCC_COLD -fno-pie -no-pie $BID -o "$out/c-gcc-nopie" "$C_SRC"
record c-gcc-nopie accuracy c gcc all "C -O2 gcc non-PIE, DWARF 5, strip --strip-all"
run "$GCC" -O2 -g $GCC_COLD -fPIC -shared -DFIXTURE_LIBRARY $BID -o "$out/libc-gcc.so" "$C_SRC"
record libc-gcc.so accuracy c gcc all "C -O2 gcc shared object, DWARF 5"
run "$GCC" -O2 -g -gz $GCC_COLD -fPIE -pie $BID -o "$out/c-gcc-gz" "$C_SRC"
record c-gcc-gz accuracy c gcc debug "C -O2 gcc PIE, DWARF 5, zlib-compressed debug sections (-gz)"

run objcopy --compress-debug-sections=zstd "$out/c-gcc-pie.debug" "$out/c-gcc-pie.debug.zstd"
run "$here/add-minidebuginfo.sh" "$out/c-gcc-pie" "$out/c-gcc-pie.minidebuginfo"

# ---- C, clang
run "$CLANG" -O2 -g -fPIE -pie $BID -o "$out/c-clang-pie" "$C_SRC"
record c-clang-pie accuracy c clang debug "C -O2 clang PIE, DWARF 5"
run "$CLANG" -O2 -gdwarf-4 -fPIE -pie $BID -o "$out/c-clang-pie-dwarf4" "$C_SRC"
record c-clang-pie-dwarf4 accuracy c clang debug "C -O2 clang PIE, DWARF 4"
run "$CLANG" -O2 -g -fno-pie -no-pie $BID -o "$out/c-clang-nopie" "$C_SRC"
record c-clang-nopie accuracy c clang all "C -O2 clang non-PIE, DWARF 5, strip --strip-all"
run "$CLANG" -O2 -g -fPIC -shared -DFIXTURE_LIBRARY $BID -o "$out/libc-clang.so" "$C_SRC"
record libc-clang.so accuracy c clang debug "C -O2 clang shared object, DWARF 5"
run "$CLANG" -O2 -g -gz -fPIE -pie $BID -o "$out/c-clang-gz" "$C_SRC"
record c-clang-gz accuracy c clang debug "C -O2 clang PIE, DWARF 5, -gz"

# ---- C++
run "$GXX" -O2 -g -std=c++17 -fPIE -pie $BID -o "$out/cpp-gcc" "$CXX_SRC"
record cpp-gcc accuracy c++ g++ debug "C++ -O2 g++ PIE, DWARF 5"
run "$CLANGXX" -O2 -g -std=c++17 -fPIE -pie $BID -o "$out/cpp-clang" "$CXX_SRC"
record cpp-clang accuracy c++ clang++ debug "C++ -O2 clang++ PIE, DWARF 5"

# ---- Swift
mkdir -p "$out/swift-module-cache"
run "$SWIFTC" -O -g -module-cache-path "$out/swift-module-cache" -module-name ShapesFixture \
  -Xlinker --build-id -o "$out/swift-O" "$SWIFT_SRC"
record swift-O accuracy swift swiftc debug "Swift -O -g executable"

# ---- no DWARF at all: only the symbol table answers (Stackline's symtab fallback)
run "$GCC" -O2 -fPIE -pie $BID -o "$out/c-gcc-symtab-only" "$C_SRC"
record c-gcc-symtab-only accuracy c gcc debug "C -O2 gcc PIE without -g: symbol table only"
run "$SWIFTC" -O -module-cache-path "$out/swift-module-cache" -module-name ShapesFixture \
  -Xlinker --build-id -o "$out/swift-symtab-only" "$SWIFT_SRC"
record swift-symtab-only accuracy swift swiftc debug "Swift -O without -g: symbol table only"

# ---- crash fixture (load-address test) and an ELF without a build-id (bad input test)
run "$GCC" -O2 -g -fPIE -pie $BID -o "$out/crash-gcc" "$here/c/crashsite.c" -ldl
record crash-gcc crash c gcc debug "C -O2 gcc PIE that prints its load base and crashes with SIGSEGV"
run "$GCC" -O2 -g -Wl,--build-id=none -o "$out/no-build-id" "$C_SRC"
if [ -n "$(build_id "$out/no-build-id")" ]; then
  echo "build-elf-fixtures.sh: no-build-id still has a build-id" >&2
  exit 3
fi
printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' no-build-id no-build-id c gcc "$out/no-build-id" - - - \
  "C linked with --build-id=none" >> "$manifest.tmp"

mv "$manifest.tmp" "$manifest"
echo "built $(wc -l < "$manifest") fixtures into $out" >&2
