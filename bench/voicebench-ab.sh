#!/usr/bin/env bash
# Two builds of our media node side by side on S1 (PCMU, audio-loopback
# agent): the way to tell whether a change to the media path made a call
# cheaper, measured in one interleaved session (A, B, A, B, ...) so that
# the load of a shared machine falls on both alike.
#
#   A=/tmp/voiced-old B=./bin/voiced bench/voicebench-ab.sh
#
# A and B are voiced binaries (default B: a fresh build of the tree).
# MODE=sip (default; S1 with CODEC), ws (realtime WebSocket sessions,
# PCM16 at 16 kHz) or webrtc (browser calls through mic sessions) picks
# the front door; every mode talks to the loopback agent.
# Knobs (environment): ROUNDS=2 N=200 HOLD=20s CODEC=PCMU SUT_CPU=0
# GEN_CPU=1 KNEE=0 (1: also --find-max per build, START=100 FACTOR=1.4
# WINDOW=15s MAX=4000) NICE (as in voicebench-full.sh) OUT=/tmp/voicebench-ab.
# Prints voicebench compare's table with the ratio B / A: CPU µs per packet
# (the node's CPU time from /proc over the window, per packet voicebench
# sent it) and, with KNEE=1, the largest sustained N.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-2}
N=${N:-200}
HOLD=${HOLD:-20s}
CODEC=${CODEC:-PCMU}
SUT_CPU=${SUT_CPU:-0}
GEN_CPU=${GEN_CPU:-1}
KNEE=${KNEE:-0}
START=${START:-100}
FACTOR=${FACTOR:-1.4}
WINDOW=${WINDOW:-15s}
MAX=${MAX:-4000}
OUT=${OUT:-/tmp/voicebench-ab}
MODE=${MODE:-sip}
: "${A:?A=path to the reference voiced binary}"
if [ -z "${B:-}" ]; then
  go build -tags nolibopusfile -o bin/voiced ./cmd/voiced
  B=./bin/voiced
fi
go build -tags nolibopusfile -o bin/voicebench ./cmd/voicebench
export VOICED_RTP_PORTS=${VOICED_RTP_PORTS:-20000-31999}
. bench/voiced-node.sh

work=$(mktemp -d)
trap 'stop_voiced; rm -rf "$work"' EXIT
rm -rf "$OUT"
mkdir -p "$OUT"
# shellcheck disable=SC2086
gen=(taskset -c "$GEN_CPU" $NICE ./bin/voicebench load --quiet --per-call=false --rate 100)

# run NAME BINARY ARGS...: a fresh node from BINARY, one voicebench run
# against it into $OUT/NAME.
run() {
  local name=$1 bin=$2
  shift 2
  # shellcheck disable=SC2086
  VOICED_BIN=$bin start_voiced "$work/$name" taskset -c "$SUT_CPU" $NICE
  log "$name ($bin, load average $(cut -d' ' -f1-3 /proc/loadavg)): $*"
  local target
  case "$MODE" in
  sip) target=(--mode sip --sip "$VOICED_SIP" --to "$VOICED_NUMBER" --codec "$CODEC") ;;
  ws) target=(--mode ws --url "ws://$VOICED_HTTP/v1/realtime" --api-key "$VOICED_KEY") ;;
  webrtc) target=(--mode webrtc --api "http://$VOICED_HTTP" --agent-id "$VOICED_AGENT" --api-key "$VOICED_KEY") ;;
  *) echo "MODE must be sip, ws or webrtc" >&2; exit 2 ;;
  esac
  "${gen[@]}" --out "$OUT/$name" "${target[@]}" \
    --pid "$VOICED_PID" "$@" >"$OUT/$name.log" 2>&1 || { log "$name failed:"; tail -5 "$OUT/$name.log" >&2; }
  tail -n +2 "$OUT/$name.log" | sed 's/^/    /' >&2
  stop_voiced
}

for r in $(seq "$ROUNDS"); do
  run "fixed-A-$r" "$A" --calls "$N" --hold "$HOLD"
  run "fixed-B-$r" "$B" --calls "$N" --hold "$HOLD"
done
if [ "$KNEE" = 1 ]; then
  for r in $(seq "$ROUNDS"); do
    for x in A B; do
      run "knee-$x-$r" "${!x}" --find-max --factor "$FACTOR" --max "$MAX" --window "$WINDOW" --start "$START"
    done
  done
fi

cmp() { # SCENARIO TITLE
  local args=()
  for x in A B; do
    for r in $(seq "$ROUNDS"); do
      [ -f "$OUT/$1-$x-$r/results.json" ] && args+=("$x=$OUT/$1-$x-$r")
    done
  done
  ./bin/voicebench compare --out "$OUT/$1.md" --title "$2" --ratio B:A "${args[@]}"
  cat "$OUT/$1.md"
}
echo "A=$A B=$B MODE=$MODE ROUNDS=$ROUNDS N=$N HOLD=$HOLD CODEC=$CODEC"
cmp fixed "$MODE $CODEC, $N calls, A=$A, B=$B"
[ "$KNEE" = 1 ] && cmp knee "$CODEC, largest sustained N, A=$A, B=$B"
exit 0
