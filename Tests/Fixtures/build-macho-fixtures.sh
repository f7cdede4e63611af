#!/usr/bin/env bash
# Builds the Mach-O fixtures (real iOS binaries and dSYMs, made on Linux) into OUTDIR,
# by default Tests/Fixtures/macho, where the outputs are committed: tests read them and need
# no Apple tools at run time. Rerun this only to change the fixtures.
#
#   Tests/Fixtures/build-macho-fixtures.sh [OUTDIR]
#
# Outputs (see README.md):
#   Sample                     fat executable (arm64 iOS 14 + x86_64 iOS 14 simulator) from
#                              c/inlining.c and cpp/geometry.cpp at -O2; symbol table and
#                              debug map, no DWARF
#   Sample.dSYM/               fat dSYM bundle of Sample (one DWARF slice per arch)
#   libgeometry.dylib.dSYM/    thin arm64 dSYM bundle of a dylib built from cpp/geometry.cpp
#
# Tools: clang (CLANG), Debian lld-14's ld64.lld-14 (LD64; the Swift toolchain's ld64.lld
# refuses iOS), dsymutil-14 (DSYMUTIL), llvm-lipo-14 (LIPO). A missing tool is an error.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/macho}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

CLANG="${CLANG:-clang}"
LD64="${LD64:-ld64.lld-14}"
DSYMUTIL="${DSYMUTIL:-dsymutil-14}"
LIPO="${LIPO:-llvm-lipo-14}"
missing=()
for tool in "$CLANG" "$LD64" "$DSYMUTIL" "$LIPO"; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ ${#missing[@]} -ne 0 ]; then
  echo "build-macho-fixtures.sh: missing tool(s): ${missing[*]} (scripts/install-deps.sh installs llvm-14 and lld-14; the Swift toolchain provides clang)" >&2
  exit 2
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/stackline-macho.XXXXXX")"
trap 'rm -rf "$work"' EXIT
# dsymutil runs `lipo` to join the slices of a fat dSYM.
mkdir "$work/bin"
ln -s "$(command -v "$LIPO")" "$work/bin/lipo"

# Linux has no Apple SDK: c/darwin-libc declares the few libc functions inlining.c calls.
# The binaries never run, so -undefined dynamic_lookup leaves those symbols unresolved.
cflags=(-g -O2 -nostdinc -isystem "$here/c/darwin-libc" "-fdebug-prefix-map=$here=/stackline/Tests/Fixtures")
cxxflags=(-g -O2 -nostdinc -nostdinc++ -fno-exceptions -fno-rtti "-fdebug-prefix-map=$here=/stackline/Tests/Fixtures")

slices=()
for arch in arm64 x86_64; do
  case "$arch" in
    arm64) target=arm64-apple-ios14.0 platform=ios ;;
    x86_64) target=x86_64-apple-ios14.0-simulator platform=ios-simulator ;;
  esac
  "$CLANG" -target "$target" "${cflags[@]}" -c "$here/c/inlining.c" -o "$work/inlining-$arch.o"
  "$CLANG" -x c++ -target "$target" "${cxxflags[@]}" -c "$here/cpp/geometry.cpp" -o "$work/geometry-$arch.o"
  "$LD64" -arch "$arch" -platform_version "$platform" 14.0 14.0 -e _main -undefined dynamic_lookup \
    "$work/inlining-$arch.o" "$work/geometry-$arch.o" -o "$work/Sample-$arch"
  slices+=("$work/Sample-$arch")
done
"$LIPO" -create "${slices[@]}" -output "$work/Sample"

"$LD64" -arch arm64 -platform_version ios 14.0 14.0 -dylib -undefined dynamic_lookup \
  -install_name @rpath/libgeometry.dylib "$work/geometry-arm64.o" -o "$work/libgeometry.dylib"

rm -rf "$out/Sample" "$out/Sample.dSYM" "$out/libgeometry.dylib.dSYM"
PATH="$work/bin:$PATH" "$DSYMUTIL" "$work/Sample" -o "$out/Sample.dSYM"
"$DSYMUTIL" "$work/libgeometry.dylib" -o "$out/libgeometry.dylib.dSYM"
cp "$work/Sample" "$out/Sample"
echo "built $out: Sample, Sample.dSYM, libgeometry.dylib.dSYM"
