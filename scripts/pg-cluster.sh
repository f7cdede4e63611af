#!/usr/bin/env bash
# A throwaway PostgreSQL 15 cluster on a free loopback port, for benchmarks and by-hand runs
# (tests use TestSupport's PostgresCluster). PostgreSQL refuses to run as root, so as root the
# server runs as the `postgres` user. fsync is off: nothing here must survive a power cut.
#
#   scripts/pg-cluster.sh start DIR     # initdb + start; prints the URL of database `stackline`
#   scripts/pg-cluster.sh stop DIR      # stop and remove DIR
set -euo pipefail
bin=/usr/lib/postgresql/15/bin
cmd=${1:?usage: pg-cluster.sh start|stop DIR}
dir=${2:?usage: pg-cluster.sh start|stop DIR}
as_server() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
case "$cmd" in
start)
  [ -x "$bin/initdb" ] || { echo "pg-cluster.sh: no PostgreSQL 15 in $bin: run scripts/install-deps.sh" >&2; exit 1; }
  mkdir -p "$dir"
  [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$dir"
  as_server "$bin/initdb" -D "$dir/data" -A trust -U postgres --no-sync >/dev/null
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  as_server "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null
  as_server "$bin/psql" -h "$dir" -p "$port" -U postgres -qc "CREATE DATABASE stackline" postgres
  echo "postgres://postgres@127.0.0.1:$port/stackline"
  ;;
stop)
  [ -d "$dir/data" ] && as_server "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
  ;;
*) echo "usage: pg-cluster.sh start|stop DIR" >&2; exit 2 ;;
esac
