# Sourced by scripts that run a throwaway `stackline serve` (test-api.sh, bench-serve.sh):
#   serve_scratch NAME             a temp directory $work with its own database and store
#                                  (STACKLINE_DB, STACKLINE_SYMBOLS), removed on exit with the server
#   require_stackline NAME         sets $root and $STACKLINE (default: the release build), or
#                                  stops script NAME when that binary is missing
#   serve_start STACKLINE ARGS…    starts `STACKLINE serve ARGS…` on a free loopback port, logging
#                                  to $work/serve.log; sets $server_pid and $base once /healthz answers
#   free_port                      prints a free loopback port
#   wait_healthy URL PID TRIES WHAT LOG…
#                                  waits (TRIES × 0.1 s) for URL/healthz to answer while PID lives;
#                                  else says WHAT did not start, shows its LOGs and fails
require_stackline() {
  root="$(pwd)"
  STACKLINE="${STACKLINE:-$root/.build/release/stackline}"
  [ -x "$STACKLINE" ] || { echo "$1: $STACKLINE is missing: run 'swift build -c release'" >&2; exit 1; }
}

serve_scratch() {
  work=$(mktemp -d "${TMPDIR:-/tmp}/stackline-$1.XXXXXX")
  server_pid=
  trap 'serve_stop; rm -rf "$work"' EXIT
  export STACKLINE_DB="$work/db.sqlite" STACKLINE_SYMBOLS="$work/symbols"
  mkdir -p "$STACKLINE_SYMBOLS"
}

serve_stop() {
  if [ -n "${server_pid:-}" ]; then
    kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
    server_pid=
  fi
}

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

wait_healthy() {
  local url=$1 pid=$2 tries=$3 what=$4
  shift 4
  for _ in $(seq 1 "$tries"); do
    curl -sf "$url/healthz" >/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "$what did not start:" >&2
  cat "$@" >&2
  return 1
}

serve_start() {
  local stackline=$1 port
  shift
  # Chosen here rather than with port 0: at --log-level warning the server does not log its port.
  port=$(free_port)
  "$stackline" serve --listen "127.0.0.1:$port" "$@" >"$work/serve.log" 2>&1 &
  server_pid=$!
  base="http://127.0.0.1:$port"
  wait_healthy "$base" "$server_pid" 600 "stackline serve" "$work/serve.log"
}
