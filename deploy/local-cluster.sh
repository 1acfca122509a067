#!/usr/bin/env bash
# The scale-out shape on one machine, on loopback, from the built binary
# (README "Scaling out", issue 26):
#   PostgreSQL and Redis, two `voiced control` replicas, two `voiced media`
#   nodes (separate SIP, RTP, WebRTC and HTTP ports) and Kamailio
#   (deploy/kamailio/kamailio.cfg) spreading SIP over the media nodes.
#
# usage: deploy/local-cluster.sh up|status|down
#   up      start what is not running (again: nothing, or only what died)
#   status  one JSON object on stdout: api_url, api_key, sip_addr (Kamailio),
#           database_url, redis_url, nodes [{role, pid, log, alive, ...}];
#           exit status 1 when any part is down
#   down    stop everything up started (media nodes drain first), and only that
#
# Settings (environment):
#   VOICED_CLUSTER_DIR           state: pids, logs, config, data (default .local-cluster in the repository)
#   VOICED_BIN                   the voiced binary (default bin/voiced: make build)
#   VOICED_CLUSTER_DATABASE_URL  PostgreSQL database to use (default: database voiced_local on
#                                127.0.0.1:5432, created if missing; PostgreSQL is started, or
#                                installed as root, the way .ci/run does when unreachable)
#   VOICED_CLUSTER_REDIS_URL     Redis to use (default: 127.0.0.1:6379 database 13 when it answers,
#                                else a redis-server of the cluster's own on a free port)
#   VOICED_CLUSTER_OWN_REDIS=1   always run a redis-server of the cluster's own
#   VOICED_CLUSTER_RTP_BASE      first RTP port: media-1 takes BASE..BASE+499, media-2 the next 500 (default 40000)
#   VOICED_CLUSTER_DRAIN_TIMEOUT media nodes' --drain-timeout (default 30s)
#   VOICED_CLUSTER_CONTROL_ARGS, VOICED_CLUSTER_MEDIA_ARGS  extra flags for the roles
#                                (like --call-loopback, --llm-base-url ...)
# Ports are picked free on the first up and kept in the state directory.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${VOICED_BIN:-$ROOT/bin/voiced}
DIR=${VOICED_CLUSTER_DIR:-$ROOT/.local-cluster}
RTP_BASE=${VOICED_CLUSTER_RTP_BASE:-40000}
DRAIN=${VOICED_CLUSTER_DRAIN_TIMEOUT:-30s}
KAM_CFG=$ROOT/deploy/kamailio/kamailio.cfg
MEDIA_NODES=(media-1 media-2)
CONTROLS=(control-1 control-2)

die() { echo "local-cluster: $*" >&2; exit 1; }
say() { echo "local-cluster: $*" >&2; }

# ---- state: key=value lines in $DIR/cluster.env --------------------------
get() { [ -f "$DIR/cluster.env" ] && sed -n "s/^$1=//p" "$DIR/cluster.env" | tail -1 || true; }
put() { # put KEY VALUE: replace or add
  local tmp
  tmp=$(mktemp "$DIR/.env.XXXXXX")
  { [ -f "$DIR/cluster.env" ] && grep -v "^$1=" "$DIR/cluster.env" || true; echo "$1=$2"; } >"$tmp"
  mv "$tmp" "$DIR/cluster.env"
}

# ---- processes ---------------------------------------------------------------
# A process is ours when its pid file names a live process whose command
# line mentions $DIR (every command below does), so a reused pid is never
# taken for ours.
pid_of() { [ -f "$DIR/$1.pid" ] && cat "$DIR/$1.pid" || true; }
ours() {
  local pid=$1
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  # A zombie (exited, not yet reaped) is not running.
  [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$DIR"
}
alive() { ours "$(pid_of "$1")"; }

# start NAME CMD...: in its own session (so down can signal its whole
# process group), stdin closed, stdout to NAME.out, stderr to NAME.log.
start() {
  local name=$1
  shift
  setsid "$@" </dev/null >>"$DIR/$name.out" 2>>"$DIR/$name.log" &
  local pid=$!
  echo "$pid" >"$DIR/$name.pid"
  # Until it has exec'd, the child's command line is this script's, which
  # does not mention $DIR: alive would call it gone (a loaded machine
  # showed "exited while starting" with an empty log). Wait for the exec,
  # or for the child to die.
  for _ in $(seq 250); do
    ours "$pid" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.02
  done
}

# wait_log NAME REGEX: until the log has a line matching REGEX (30 s).
wait_log() {
  local name=$1 re=$2
  for _ in $(seq 300); do
    grep -qE -- "$re" "$DIR/$name.log" 2>/dev/null && return 0
    alive "$name" || { tail -n 30 "$DIR/$name.log" >&2 2>/dev/null; die "$name exited while starting (log: $DIR/$name.log)"; }
    sleep 0.1
  done
  tail -n 30 "$DIR/$name.log" >&2
  die "$name did not get ready in 30 s (log: $DIR/$name.log)"
}

# stop NAME TIMEOUT_S: SIGTERM to its process group, SIGKILL after TIMEOUT_S.
stop() {
  local name=$1 limit=$2 pid
  pid=$(pid_of "$name")
  if ours "$pid"; then
    say "stopping $name (pid $pid)"
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq $((limit * 10))); do ours "$pid" || break; sleep 0.1; done
    if ours "$pid"; then
      say "$name did not stop in ${limit}s: SIGKILL"
      kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
      for _ in $(seq 50); do ours "$pid" || break; sleep 0.1; done
    fi
  fi
  rm -f "$DIR/$name.pid"
}

# ---- ports ------------------------------------------------------------------
# free_port: a TCP and UDP port nobody listens on, out of the RTP ranges
# and not handed out before.
free_port() {
  local p
  for _ in $(seq 500); do
    p=$((20000 + RANDOM % 10000))
    grep -q "=$p\$" "$DIR/cluster.env" 2>/dev/null && continue
    [ -z "$(ss -Hlntu "sport = :$p" 2>/dev/null)" ] || continue
    echo "$p"
    return 0
  done
  die "no free port found"
}
port() { # port KEY: the kept port, else a new free one
  local p
  p=$(get "$1")
  if [ -z "$p" ]; then
    p=$(free_port)
    put "$1" "$p"
  fi
  echo "$p"
}

need_cmd() { # need_cmd COMMAND DEBIAN_PACKAGE
  command -v "$1" >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing $2"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$2" >/dev/null ||
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$2" >/dev/null; }
    command -v "$1" >/dev/null 2>&1 && return 0
  fi
  die "$1 not found: apt-get install $2 (deploy/debian-deps.sh test installs it)"
}

rand_hex() { head -c "$1" /dev/urandom | od -An -tx1 | tr -d ' \n'; }

# ---- PostgreSQL ---------------------------------------------------------------
postgres_up() {
  local url
  url=$(get database_url)
  if [ -z "$url" ]; then url=${VOICED_CLUSTER_DATABASE_URL:-}; fi
  if [ -n "$url" ]; then
    need_cmd psql postgresql-client
    psql "$url" -qAtc 'select 1' >/dev/null 2>&1 || die "PostgreSQL at $url does not answer"
    put database_url "$url"
    return
  fi
  need_cmd psql postgresql-client
  local admin="postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
  if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
    # As .ci/run: the Debian cluster, started (installed first) as root.
    [ "$(id -u)" = 0 ] || die "PostgreSQL does not answer on 127.0.0.1:5432: start it (pg_ctlcluster <version> main start) or set VOICED_CLUSTER_DATABASE_URL"
    command -v pg_ctlcluster >/dev/null || need_cmd pg_ctlcluster postgresql
    for v in $(ls /etc/postgresql); do pg_ctlcluster --skip-systemctl-redirect "$v" main start || true; done
    for _ in $(seq 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
    pg_isready -q -h 127.0.0.1 -p 5432 || die "PostgreSQL did not start"
    put postgres_started "$(ls /etc/postgresql | tr '\n' ' ')"
  fi
  if ! psql "$admin" -qAtc 'select 1' >/dev/null 2>&1; then
    # A fresh install wants a password on TCP: as .ci/run, give postgres one.
    [ "$(id -u)" = 0 ] || die "cannot connect to PostgreSQL as postgres without a password: set VOICED_CLUSTER_DATABASE_URL"
    su postgres -c "psql -qc \"ALTER USER postgres PASSWORD 'postgres'\"" >/dev/null
    admin="postgres://postgres:postgres@127.0.0.1:5432/postgres?sslmode=disable"
  fi
  if [ "$(psql "$admin" -qAtc "select 1 from pg_database where datname = 'voiced_local'")" != 1 ]; then
    psql "$admin" -qc 'CREATE DATABASE voiced_local' >/dev/null
  fi
  put database_url "${admin%/postgres?sslmode=disable}/voiced_local?sslmode=disable"
}

# ---- Redis --------------------------------------------------------------------
redis_up() {
  local url
  url=$(get redis_url)
  if [ -z "$url" ]; then
    if [ -n "${VOICED_CLUSTER_REDIS_URL:-}" ]; then
      url=$VOICED_CLUSTER_REDIS_URL
    elif [ "${VOICED_CLUSTER_OWN_REDIS:-}" != 1 ] && command -v redis-cli >/dev/null && redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
      url=redis://127.0.0.1:6379/13
    else
      put redis_own 1
      url=redis://127.0.0.1:$(port redis_port)/0
    fi
    put redis_url "$url"
  fi
  if [ "$(get redis_own)" = 1 ]; then
    need_cmd redis-server redis-server
    need_cmd redis-cli redis-tools
    if ! alive redis; then
      mkdir -p "$DIR/redis"
      start redis redis-server --bind 127.0.0.1 --port "$(get redis_port)" --save "" --appendonly no --dir "$DIR/redis" --daemonize no --set-proc-title no
      for _ in $(seq 50); do redis-cli -u "$url" ping >/dev/null 2>&1 && break; sleep 0.1; done
    fi
  fi
  redis-cli -u "$url" ping >/dev/null 2>&1 || die "Redis at $url does not answer"
}

# ---- voiced roles -------------------------------------------------------------
control_up() { # control_up I
  local name=control-$1 http internal
  http=$(port "${name}_http") internal=$(port "${name}_internal")
  alive "$name" && return 0
  mkdir -p "$DIR/$name"
  : >"$DIR/$name.log"
  # shellcheck disable=SC2086 # extra flags are words
  start "$name" "$BIN" control --data-dir "$DIR/$name" --database-url "$(get database_url)" --redis-url "$(get redis_url)" \
    --secret-key "$(get secret_key)" --cluster-secret "$(get cluster_secret)" \
    --http-addr "127.0.0.1:$http" --internal-addr "127.0.0.1:$internal" ${VOICED_CLUSTER_CONTROL_ARGS:-}
  wait_log "$name" 'msg=serving '
  say "$name: http://127.0.0.1:$http (internal API 127.0.0.1:$internal)"
}

media_up() { # media_up I: media-I reaches control-I's internal API
  local i=$1 name=media-$1 sip http low
  sip=$(port "${name}_sip") http=$(port "${name}_http")
  alive "$name" && return 0
  low=$((RTP_BASE + (i - 1) * 500))
  mkdir -p "$DIR/$name"
  : >"$DIR/$name.log"
  # shellcheck disable=SC2086
  start "$name" "$BIN" media --data-dir "$DIR/$name" --redis-url "$(get redis_url)" --cluster-secret "$(get cluster_secret)" \
    --control-url "http://127.0.0.1:$(get "control-${i}_internal")" --node-id "local-$name" \
    --http-addr "127.0.0.1:$http" --sip-addr "127.0.0.1:$sip" --sip-trusted 127.0.0.1 \
    --rtp-ports "$low-$((low + 499))" --webrtc-udp-addr 127.0.0.1:0 --drain-timeout "$DRAIN" ${VOICED_CLUSTER_MEDIA_ARGS:-}
  wait_log "$name" 'msg="media node serving"'
  say "$name: SIP 127.0.0.1:$sip, RTP $low-$((low + 499)), http://127.0.0.1:$http"
}

kamailio_up() {
  local sip
  sip=$(port kamailio_sip)
  alive kamailio && return 0
  need_cmd kamailio kamailio
  mkdir -p "$DIR/kamailio"
  "$ROOT/deploy/kamailio/dispatcher-list.sh" "127.0.0.1:$(get media-1_sip)" "127.0.0.1:$(get media-2_sip)" >"$DIR/kamailio/dispatcher.list"
  : >"$DIR/kamailio.log"
  # Probes every 2 s; a node is skipped on its first failed probe and back
  # on its first good one: a local node that restarts is used again fast.
  start kamailio kamailio -DD -E -f "$KAM_CFG" -Y "$DIR/kamailio" -P "$DIR/kamailio/kamailio.pid" -w "$DIR/kamailio" -m 32 -M 4 \
    -A "LISTEN=udp:127.0.0.1:$sip" -A "DS_LIST=\"$DIR/kamailio/dispatcher.list\"" -A DS_PING_INTERVAL=2 \
    -A DS_PROBING_THRESHOLD=1 -A DS_INACTIVE_THRESHOLD=1 -A INVITE_TIMEOUT=1000
  for _ in $(seq 100); do
    [ -n "$(ss -Hlnu "sport = :$sip" 2>/dev/null)" ] && break
    alive kamailio || { tail -n 30 "$DIR/kamailio.log" >&2; die "kamailio exited while starting (log: $DIR/kamailio.log)"; }
    sleep 0.1
  done
  [ -n "$(ss -Hlnu "sport = :$sip" 2>/dev/null)" ] || die "kamailio does not listen on 127.0.0.1:$sip (log: $DIR/kamailio.log)"
  say "kamailio: SIP udp 127.0.0.1:$sip"
}

api_key_up() {
  [ -s "$DIR/api_key" ] && return 0
  local key
  # The first control replica on an empty database bootstraps an org and
  # prints its key once.
  key=$(grep -oE 'sk_live_[0-9a-f]+' "$DIR/control-1.out" 2>/dev/null | head -1 || true)
  if [ -z "$key" ]; then
    # A database bootstrapped before (the state directory was removed):
    # a new key for its first organization.
    key=$("$BIN" admin create-key --data-dir "$DIR/control-1" --database-url "$(get database_url)" --secret-key "$(get secret_key)" \
      --org-id 1 --name local-cluster | grep -oE 'sk_live_[0-9a-f]+' | head -1) || die "could not create an API key"
  fi
  (umask 077 && echo "$key" >"$DIR/api_key")
}

up() {
  [ -x "$BIN" ] || die "$BIN not found: run make build (or set VOICED_BIN)"
  command -v ss >/dev/null || need_cmd ss iproute2
  mkdir -p "$DIR"
  touch "$DIR/cluster.env"
  chmod 600 "$DIR/cluster.env"
  [ -n "$(get secret_key)" ] || put secret_key "$(rand_hex 32)"
  [ -n "$(get cluster_secret)" ] || put cluster_secret "$(rand_hex 32)"
  postgres_up
  redis_up
  # One after the other: the first migrates and bootstraps.
  for i in 1 2; do control_up "$i"; done
  api_key_up
  for i in 1 2; do media_up "$i"; done
  kamailio_up
  status >/dev/null || die "not every part is up: deploy/local-cluster.sh status"
  say "up; deploy/local-cluster.sh status prints the addresses"
}

# ---- status -------------------------------------------------------------------
json() { # a JSON string
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  printf '"%s"' "$s"
}

status() {
  [ -f "$DIR/cluster.env" ] || { echo '{"nodes":[]}'; say "not up ($DIR has no cluster)"; return 1; }
  local ok=0 nodes=() name pid up extra
  for name in redis "${CONTROLS[@]}" "${MEDIA_NODES[@]}" kamailio; do
    [ "$name" = redis ] && [ "$(get redis_own)" != 1 ] && continue
    pid=$(pid_of "$name") up=false extra=
    if alive "$name"; then up=true; else ok=1; fi
    case "$name" in
      control-*) extra=",\"api_url\":$(json "http://127.0.0.1:$(get "${name}_http")")" ;;
      media-*) extra=",\"sip_addr\":$(json "127.0.0.1:$(get "${name}_sip")"),\"http_url\":$(json "http://127.0.0.1:$(get "${name}_http")"),\"node_id\":$(json "local-$name")" ;;
      kamailio) extra=",\"sip_addr\":$(json "127.0.0.1:$(get kamailio_sip)")" ;;
    esac
    nodes+=("{\"role\":$(json "${name%-[0-9]}"),\"name\":$(json "$name"),\"pid\":${pid:-0},\"alive\":$up,\"log\":$(json "$DIR/$name.log")$extra}")
  done
  local db redis
  db=$(get database_url) redis=$(get redis_url)
  if [ -z "$db" ] || ! psql "$db" -qAtc 'select 1' >/dev/null 2>&1; then ok=1; fi
  if [ -z "$redis" ] || ! redis-cli -u "$redis" ping >/dev/null 2>&1; then ok=1; fi
  local list
  list=$(IFS=,; echo "${nodes[*]}")
  printf '{"ok":%s,"api_url":%s,"api_key":%s,"sip_addr":%s,"database_url":%s,"redis_url":%s,"dir":%s,"nodes":[%s]}\n' \
    "$([ $ok = 0 ] && echo true || echo false)" "$(json "http://127.0.0.1:$(get control-1_http)")" "$(json "$(cat "$DIR/api_key" 2>/dev/null || true)")" \
    "$(json "127.0.0.1:$(get kamailio_sip)")" "$(json "$db")" "$(json "$redis")" "$(json "$DIR")" "$list"
  return $ok
}

# ---- down ---------------------------------------------------------------------
down() {
  [ -d "$DIR" ] || { say "nothing to stop ($DIR does not exist)"; return 0; }
  local limit
  # The media nodes drain (their calls get --drain-timeout) before SIGKILL.
  limit=$(("$(echo "$DRAIN" | sed -E 's/^([0-9]+)s$/\1/;t;s/^([0-9]+)m$/\1*60/;t;s/.*/30/')" + 20))
  stop kamailio 10
  for n in "${MEDIA_NODES[@]}"; do stop "$n" "$limit" & done
  wait
  for n in "${CONTROLS[@]}"; do stop "$n" 30 & done
  wait
  stop redis 10
  local pg
  pg=$(get postgres_started)
  if [ -n "$pg" ]; then
    for v in $pg; do pg_ctlcluster --skip-systemctl-redirect "$v" main stop || true; done
    put postgres_started ""
  fi
  say "down"
}

case "${1:-}" in
  up) up ;;
  status) status ;;
  down) down ;;
  *) echo "usage: $0 up|status|down" >&2; exit 2 ;;
esac
