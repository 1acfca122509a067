#!/usr/bin/env bash
# The smoke load of `make bench`: 30 seconds of SIP+RTP calls from
# voicebench against a local `voiced serve` whose number has the
# audio-loopback agent (bench/voiced-node.sh). Prints voicebench's
# summary; the full report goes to $OUT (default /tmp/voicebench-smoke).
# CALLS (default 50) and HOLD (default 30s) change the load.
set -euo pipefail
cd "$(dirname "$0")/.."
CALLS=${CALLS:-50}
HOLD=${HOLD:-30s}
go build -tags nolibopusfile -o bin/voiced ./cmd/voiced
go build -tags nolibopusfile -o bin/voicebench ./cmd/voicebench
. bench/voiced-node.sh
work=$(mktemp -d)
trap 'stop_voiced; rm -rf "$work"' EXIT
start_voiced "$work/node"
echo "voicebench smoke: $CALLS G.711 calls for $HOLD against voiced serve (pid $VOICED_PID, loopback agent on $VOICED_NUMBER)"
./bin/voicebench --mode sip --sip "$VOICED_SIP" --to "$VOICED_NUMBER" --calls "$CALLS" --rate 20 --hold "$HOLD" \
  --pid "$VOICED_PID" --quiet --out "${OUT:-/tmp/voicebench-smoke}"
