#!/usr/bin/env bash
# HTTP benchmark of an authenticated GET (GET /v1/orgs/ with an API key) on
# SQLite and on PostgreSQL: wrk -t2 -c32 -d${DURATION:-10s} --latency.
# Prints requests/s and p99 per database. Needs wrk (make deps-bench).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
# NICE="nice -n -10" gives the server and wrk priority over other work on a shared machine.
NICE=${NICE:-}
PG_SERVER=${VOICED_TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
go build -tags nolibopusfile -o bin/voiced ./cmd/voiced
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

run_one() { # name database-url
  local name=$1 url=$2 port=18181
  local dir="$work/$name"
  mkdir -p "$dir"
  key=$(./bin/voiced admin bootstrap --data-dir "$dir" --database-url "$url" | sed -n 's/.*"api_key":"\([^"]*\)".*/\1/p')
  $NICE ./bin/voiced serve --data-dir "$dir" --database-url "$url" --http-addr 127.0.0.1:$port 2>"$dir/log" >/dev/null &
  local pid=$!
  for _ in $(seq 50); do curl -sf http://127.0.0.1:$port/v1/healthz >/dev/null && break; sleep 0.1; done
  curl -sf -H "Authorization: Bearer $key" http://127.0.0.1:$port/v1/orgs/ >/dev/null
  $NICE wrk -t2 -c32 -d"$DURATION" --latency -H "Authorization: Bearer $key" http://127.0.0.1:$port/v1/orgs/ >"$dir/wrk"
  kill $pid; wait $pid 2>/dev/null || true
  local rps p99 non2xx
  rps=$(awk '/Requests\/sec/ {print $2}' "$dir/wrk")
  p99=$(awk '$1=="99%" {print $2}' "$dir/wrk")
  non2xx=$(awk '/Non-2xx/ {print $NF}' "$dir/wrk")
  printf '%-10s requests/s %10s   p99 %8s   non-2xx %s\n' "$name" "$rps" "$p99" "${non2xx:-0}"
}

echo "authenticated GET /v1/orgs/ (wrk -t2 -c32 -d$DURATION), $(nproc) cores, $(go version | awk '{print $3}')"
run_one sqlite ""
if psql "$PG_SERVER" -qc 'select 1' >/dev/null 2>&1; then
  db=voiced_bench_$$
  psql "$PG_SERVER" -qc "CREATE DATABASE $db" >/dev/null
  run_one postgres "$(echo "$PG_SERVER" | sed "s#/[^/?]*\(?\|\$\)#/$db\1#")"
  psql "$PG_SERVER" -qc "DROP DATABASE $db WITH (FORCE)" >/dev/null
else
  echo "postgres   skipped: $PG_SERVER unreachable"
fi
