#!/usr/bin/env bash
# A throwaway PostgreSQL server on 127.0.0.1 for the scale-out tests (tuner worker, --workers).
#
#   eval "$(bash scripts/postgres.sh start [DIR] [PORT])"   # prints: export TUNER_TEST_POSTGRES_URL=...
#   bash scripts/postgres.sh stop [DIR]
#
# Installs Debian's `postgresql` package when it is missing and this is root (set
# TUNER_PG_NO_INSTALL=1 to never install). initdb refuses to run as root, so as root the
# server runs as the `postgres` user. Database and user are both `tuner`, password `tuner`.
set -euo pipefail
action=${1:-start}
dir=${2:-${TMPDIR:-/tmp}/tuner-postgres}
port=${3:-}

as_owner() {  # run a server program as the owner of the data folder
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_bin() {
  ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}

if [ "$action" = stop ]; then
  bin=$(pg_bin)
  if [ -n "$bin" ] && [ -f "$dir/data/postmaster.pid" ]; then
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
  fi
  exit 0
fi

bin=$(pg_bin)
if [ -z "$bin" ]; then
  if [ "$(id -u)" != 0 ] || [ -n "${TUNER_PG_NO_INSTALL:-}" ] || ! command -v apt-get >/dev/null; then
    echo "postgres.sh: PostgreSQL is not installed (Debian: apt-get install postgresql)" >&2
    exit 1
  fi
  echo "postgres.sh: installing Debian's postgresql package" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >&2
  bin=$(pg_bin)
fi
if [ -z "$port" ]; then
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
fi

# A fresh cluster every time: the tests make their own studies, nothing here is kept.
if [ -f "$dir/data/postmaster.pid" ]; then
  as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
fi
rm -rf "$dir"
mkdir -p "$dir"
if [ "$(id -u)" = 0 ]; then chown postgres: "$dir"; fi
as_owner "$bin/initdb" -D "$dir/data" -U postgres -A trust --no-sync >"$dir/initdb.log" 2>&1 \
  || { cat "$dir/initdb.log" >&2; exit 1; }
as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null \
  || { cat "$dir/server.log" >&2; exit 1; }
as_owner "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -q -v ON_ERROR_STOP=1 \
  -c "CREATE USER tuner PASSWORD 'tuner'" -c "CREATE DATABASE tuner OWNER tuner" >&2
echo "export TUNER_TEST_POSTGRES_URL=postgresql://tuner:tuner@127.0.0.1:$port/tuner"
echo "export TUNER_TEST_POSTGRES_DIR=$dir"
