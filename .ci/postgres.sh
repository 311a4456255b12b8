#!/usr/bin/env bash
# Start a throwaway PostgreSQL server for the store's tests (Debian's `postgresql` package):
# initdb into a temp dir, listening only on a unix socket in it, run as the `postgres` user.
#   .ci/postgres.sh start   -> prints the DSN on stdout (export it as ANYAGENT_STORE_TEST_DSN)
#   .ci/postgres.sh stop DIR
set -euo pipefail
bindir() {
  local found
  found=$(ls -d /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -n 1 | xargs -r dirname || true)
  if [ -z "$found" ]; then
    command -v pg_ctl >/dev/null 2>&1 && found=$(dirname "$(command -v pg_ctl)")
  fi
  [ -n "$found" ] || { echo "no PostgreSQL server binaries (apt-get install postgresql)" >&2; exit 1; }
  echo "$found"
}
case "${1:-start}" in
  start)
    bin=$(bindir)
    dir=$(mktemp -d /tmp/anyagent-pg.XXXXXX)
    chown postgres: "$dir" 2>/dev/null || true
    as() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }
    as "'$bin/initdb' -D '$dir/data' -A trust -U postgres --no-sync >'$dir/initdb.log' 2>&1"
    as "'$bin/pg_ctl' -D '$dir/data' -l '$dir/server.log' -w -o \"-k $dir -c listen_addresses='' -c fsync=off\" start >/dev/null"
    echo "postgresql:///postgres?host=$dir&user=postgres"
    ;;
  stop)
    bin=$(bindir)
    dir=$2
    as() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }
    as "'$bin/pg_ctl' -D '$dir/data' -m fast -w stop >/dev/null" || true
    rm -rf "$dir"
    ;;
esac
