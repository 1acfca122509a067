#!/usr/bin/env bash
# Our node against rtpengine on S1 (PCMU, audio-loopback agent against a
# relay) at one fixed load, interleaved (ours, rtpengine, ours, ...), with
# the knees left out: a steadier CPU-per-packet ratio than bench-full's two
# rounds at 200 calls, in a few minutes. The runs are bench-full's
# fixed-load runs: each system pinned to core SUT_CPU, voicebench to
# GEN_CPU, all at chrt -f 10 when root.
#
#   N=600 ROUNDS=3 bench/voicebench-s1cmp.sh
#
# Knobs (environment): N=600 ROUNDS=3 HOLD=20s SUT_CPU=0 GEN_CPU=1
# OUT=bench/results/voicebench-s1cmp. Prints voicebench compare's table
# with the ratio ours / rtpengine; OUT keeps every run's summary.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-600}
ROUNDS=${ROUNDS:-3}
HOLD=${HOLD:-20s}
SUT_CPU=${SUT_CPU:-0}
GEN_CPU=${GEN_CPU:-1}
OUT=${OUT:-bench/results/voicebench-s1cmp}
command -v rtpengine >/dev/null || bash deploy/debian-deps.sh bench
go build -tags nolibopusfile -o bin/voiced ./cmd/voiced
go build -tags nolibopusfile -o bin/voicebench ./cmd/voicebench
export VOICED_RTP_PORTS=${VOICED_RTP_PORTS:-20000-31999}
. bench/voiced-node.sh

work=$(mktemp -d)
trap 'stop_voiced; rm -rf "$work"' EXIT
rm -rf "$OUT"
mkdir -p "$OUT"
# shellcheck disable=SC2086
gen=(taskset -c "$GEN_CPU" $NICE ./bin/voicebench load --quiet --per-call=false --rate 100 --calls "$N" --hold "$HOLD")
for r in $(seq "$ROUNDS"); do
  # shellcheck disable=SC2086
  start_voiced "$work/node-$r" taskset -c "$SUT_CPU" $NICE
  log "ours-$r"
  "${gen[@]}" --out "$OUT/ours-$r" --mode sip --sip "$VOICED_SIP" --to "$VOICED_NUMBER" --codec PCMU \
    --pid "$VOICED_PID" >"$OUT/ours-$r.log" 2>&1 || { log "ours-$r failed:"; tail -5 "$OUT/ours-$r.log" >&2; }
  stop_voiced
  log "rtpengine-$r"
  "${gen[@]}" --out "$OUT/rtpengine-$r" --mode rtpengine --rtpengine-start --rtpengine-cpu "$SUT_CPU" \
    --ng 127.0.0.1:22230 --rtpengine-ports 2000-19999 --codec PCMU >"$OUT/rtpengine-$r.log" 2>&1 ||
    { log "rtpengine-$r failed:"; tail -5 "$OUT/rtpengine-$r.log" >&2; }
done
args=()
for s in ours rtpengine; do
  for r in $(seq "$ROUNDS"); do
    [ -f "$OUT/$s-$r/results.json" ] && args+=("$s=$OUT/$s-$r")
  done
done
./bin/voicebench compare --out "$OUT/s1cmp.md" --title "S1, PCMU, $N calls, $ROUNDS interleaved rounds" --ratio ours:rtpengine "${args[@]}"
cat "$OUT/s1cmp.md"
