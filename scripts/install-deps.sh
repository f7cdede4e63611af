#!/usr/bin/env bash
# Installs the Debian packages Stackline builds and tests with, only those missing.
set -euo pipefail
packages=(
  libdw-dev libelf-dev libsqlite3-dev zlib1g-dev   # linked libraries
  libdeflate-dev                                    # linked: fast whole-buffer inflate
  libzstd-dev                                       # linked: zstd-compressed ELF sections (elfutils 0.188 cannot inflate them)
  liblzma-dev xz-utils                              # linked: MiniDebugInfo (.gnu_debugdata); xz makes it in tests
  elfutils llvm-14 lld-14 strace                    # test oracles and fixture tools
  binutils                                          # objcopy for split debug files
  unzip zip python3                                 # test oracles: unzip -l lists zips, zip and python3 build them
  sqlite3                                           # tests check the database with plain SQL
  time                                              # bench: /usr/bin/time, CPU of a process and its workers
  curl wrk python3-venv                             # serve: curl drives the API, wrk for make bench, venv for schemathesis
  openssl                                           # SDK tests encrypt payloads with openssl enc (an independent AES-CBC)
  debuginfod gdb                                    # serve: debuginfod-find and gdb fetch debug files over /buildid/…
  lldb-14 gcc g++                                   # minidumps, cores: C and C++ programs crash; LLDB saves a minidump and is the oracle for the frames
  qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross  # arm64 cores: an arm64 program crashes under qemu-user, which writes its core
  iproute2 systemd                                  # remote workers: ip netns hosts; systemd-analyze checks the worker's unit
  python3-aiosmtpd                                  # alerts: the SMTP sink the mail test delivers to
  libpq-dev                                         # linked: the PostgreSQL backend's client library
  postgresql                                        # PostgreSQL backend: tests start throwaway clusters with its server binaries
  nginx                                             # multi-node tests: one address in front of several masters
  chromium                                          # web view: headless Chromium loads every page (Tests/EndToEndTests/WebViewEndToEndTests); its Crashpad writes real minidumps
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
