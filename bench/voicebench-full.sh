#!/usr/bin/env bash
# `make bench-full`: our media node against rtpengine, side by side, with
# a raw Go UDP echo as the floor, all driven by voicebench in one
# interleaved session (round 1: ours, rtpengine, echo; round 2: the same
# again; ...), and bench/RESULTS-voicebench.md written from the results,
# its headline copied into bench/RESULTS.md (bench/voicebench-headline.sh).
#
# Systems under test (each pinned to core SUT_CPU, voicebench to GEN_CPU):
#   ours       `voiced serve`, a number whose calls get the audio-loopback
#              agent (bench/voiced-node.sh): SIP from voicebench's own UA,
#              the full media path per call.
#   rtpengine  rtpengine-daemon in userspace (--table=-1), one worker
#              thread, driven through ng: voicebench's A leg sends to
#              rtpengine, which relays (S1) or transcodes PCMU to Opus (S2)
#              to voicebench's B leg. One packet in, one out per call per
#              20 ms, like ours.
#   echo       `voicebench echo`: one socket and goroutine per call,
#              receive and send back: the least any Go media node can do.
# Scenarios:
#   S1  PCMU both ways (rtpengine: relay; ours: decode, resample, VAD,
#       turn-taking, recording, playout, encode, pacer).
#   S2  Opus (rtpengine: PCMU in, Opus out, i.e. decode + encode per packet;
#       ours: the caller sends Opus, the node decodes and encodes Opus).
# For each: CPU per packet at equal load (N_S1 / N_S2 calls, HOLD window)
# and the largest sustained N (--find-max: loss <= 0.1%, p99 |D| <= 2 ms,
# no setup failures, generator on time).
#
# Knobs (environment): ROUNDS=2 N_S1=200 N_S2=30 HOLD=20s WINDOW=15s
# START_S1=512 START_S2=20 FACTOR=1.25 MAX=4000 SUT_CPU=0 GEN_CPU=1
# (S1's steps are then 512, 640, 800, 1000, 1250, ...: the goal's 1,000
# calls is one of them, and neighbouring steps are 25% apart, not 40%)
# NICE (default "chrt -f 10" as root: real-time priority, so other work on
# a shared machine cannot preempt the systems under test or voicebench;
# "nice -n -10" or "" otherwise) OUT=bench/results/voicebench PERF=1 (perf
# profile of our node when perf is installed).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-2}
N_S1=${N_S1:-200}
N_S2=${N_S2:-30}
HOLD=${HOLD:-20s}
WINDOW=${WINDOW:-15s}
START_S1=${START_S1:-512}
START_S2=${START_S2:-20}
FACTOR=${FACTOR:-1.25}
MAX=${MAX:-4000} # also the echo floor's socket count
SUT_CPU=${SUT_CPU:-0}
GEN_CPU=${GEN_CPU:-1}
OUT=${OUT:-bench/results/voicebench}
PERF=${PERF:-1}
NG=127.0.0.1:22230
# Port ranges below the kernel's ephemeral range (32768-60999), so other
# programs' client sockets cannot take them: the node's RTP 20000-31999
# (bench/voiced-node.sh), rtpengine 2000-19999 (four ports a call; it skips
# ports in use, such as a local PostgreSQL or Redis). The echo floor takes
# any free ports and lists them in a file.
export VOICED_RTP_PORTS=20000-31999

deploy/debian-deps.sh bench
go build -tags nolibopusfile -o bin/voiced ./cmd/voiced
go build -tags nolibopusfile -o bin/voicebench ./cmd/voicebench
. bench/voiced-node.sh

work=$(mktemp -d)
ECHO_PID=
cleanup() {
  stop_voiced
  [ -n "$ECHO_PID" ] && kill "$ECHO_PID" 2>/dev/null && wait "$ECHO_PID" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
rm -rf "$OUT"
mkdir -p "$OUT"

# shellcheck disable=SC2086
start_voiced "$work/node" taskset -c "$SUT_CPU" $NICE
# shellcheck disable=SC2086
taskset -c "$SUT_CPU" $NICE ./bin/voicebench echo --count "$MAX" --list "$work/echo.addrs" >"$work/echo.log" 2>&1 &
ECHO_PID=$!
for _ in $(seq 50); do grep -q echoing "$work/echo.log" && break; sleep 0.1; done
grep -q echoing "$work/echo.log" || { cat "$work/echo.log" >&2; exit 1; }

gen=(taskset -c "$GEN_CPU" $NICE ./bin/voicebench load --quiet --per-call=false --rate 100)
ours_s1=(--mode sip --sip "$VOICED_SIP" --to "$VOICED_NUMBER" --codec PCMU --pid "$VOICED_PID")
ours_s2=(--mode sip --sip "$VOICED_SIP" --to "$VOICED_NUMBER" --codec opus --pid "$VOICED_PID")
rte=(--mode rtpengine --rtpengine-start --rtpengine-cpu "$SUT_CPU" --ng "$NG" --rtpengine-ports 2000-19999 --codec PCMU)
echo_s1=(--mode echo --echo-list "$work/echo.addrs" --pid "$ECHO_PID" --codec PCMU)


# cpu_ticks PID...: the CPU time the processes have used, in clock ticks.
cpu_ticks() {
  local t=0 p
  for p in "$@"; do
    [ -r "/proc/$p/stat" ] && t=$((t + $(sed 's/.*) //' "/proc/$p/stat" | awk '{print $12 + $13}')))
  done
  echo "$t"
}

# quiet: wait (at most two minutes) until our node and the echo floor use
# under 3% of a core over a second. Our node ends hundreds of calls after a
# knee search (recordings, call records, transcripts), and that work on
# the shared core must not land in the next system's window: it once
# failed rtpengine's first knee step at 300 calls on p99 |D| 15 ms with
# rtpengine itself at 20% of the core.
quiet() {
  local hz prev now
  hz=$(getconf CLK_TCK)
  for _ in $(seq 120); do
    prev=$(cpu_ticks "$VOICED_PID" "$ECHO_PID")
    sleep 1
    now=$(cpu_ticks "$VOICED_PID" "$ECHO_PID")
    [ $(((now - prev) * 100)) -le $((3 * hz)) ] && return 0
  done
  log "the systems under test did not quiet down in two minutes"
}

# run NAME ARGS...: one voicebench run into $OUT/NAME, its command kept,
# once the systems under test are quiet.
run() {
  local name=$1
  shift
  quiet
  log "$name: $*"
  "${gen[@]}" --out "$OUT/$name" "$@" >"$OUT/$name.log" 2>&1 || { log "$name failed:"; tail -5 "$OUT/$name.log" >&2; }
  tail -n +2 "$OUT/$name.log" | sed 's/^/    /' >&2
}

# profile NAME SECONDS: in the background, wait SECONDS (the run's ramp)
# and take an 8 s perf profile of our node; PROF_PID is the job.
PROF_PID=
profile() {
  PROF_PID=
  [ "$PERF" = 1 ] && command -v perf >/dev/null || return 0
  (sleep "$2"; perf record -F 999 -g -p "$VOICED_PID" -o "$work/$1.data" -- sleep 8 >/dev/null 2>&1 &&
    { perf report -i "$work/$1.data" --stdio --no-children --sort dso 2>/dev/null | grep -E '^ +[0-9.]+%' | head -8
      echo
      perf report -i "$work/$1.data" --stdio --no-children --sort symbol 2>/dev/null | grep -E '^ +[0-9.]+%' | head -25
    } >"$OUT/$1.txt") &
  PROF_PID=$!
}
waitprof() { [ -z "$PROF_PID" ] || wait "$PROF_PID" || true; }

ramp() { # seconds until N calls are up at 100/s plus the settle time
  echo $(( $1 / 100 + 4 ))
}

PROF_PID=
for r in $(seq "$ROUNDS"); do
  [ "$r" = 1 ] && profile perf-s1 "$(ramp "$N_S1")"
  run "s1-ours-$r" "${ours_s1[@]}" --calls "$N_S1" --hold "$HOLD"
  waitprof
  run "s1-rtpengine-$r" "${rte[@]}" --calls "$N_S1" --hold "$HOLD"
  run "s1-echo-$r" "${echo_s1[@]}" --calls "$N_S1" --hold "$HOLD"
  [ "$r" = 1 ] && profile perf-s2 "$(ramp "$N_S2")"
  run "s2-ours-$r" "${ours_s2[@]}" --calls "$N_S2" --hold "$HOLD"
  waitprof
  run "s2-rtpengine-$r" "${rte[@]}" --transcode opus --calls "$N_S2" --hold "$HOLD"
done
knee=(--find-max --factor "$FACTOR" --max "$MAX" --window "$WINDOW")
for r in $(seq "$ROUNDS"); do
  run "knee-s1-ours-$r" "${ours_s1[@]}" "${knee[@]}" --start "$START_S1"
  run "knee-s1-rtpengine-$r" "${rte[@]}" "${knee[@]}" --start "$START_S1"
  run "knee-s1-echo-$r" "${echo_s1[@]}" "${knee[@]}" --start "$START_S1"
  run "knee-s2-ours-$r" "${ours_s2[@]}" "${knee[@]}" --start "$START_S2"
  run "knee-s2-rtpengine-$r" "${rte[@]}" --transcode opus "${knee[@]}" --start "$START_S2"
done

cmp() { # FILE TITLE SCENARIO SYSTEMS...
  local file=$1 title=$2 scen=$3
  shift 3
  local args=()
  for s in "$@"; do
    for r in $(seq "$ROUNDS"); do
      [ -f "$OUT/$scen-$s-$r/results.json" ] && args+=("$s=$OUT/$scen-$s-$r")
    done
  done
  ./bin/voicebench compare --out "$OUT/$file" --title "$title" --ratio ours:rtpengine --ratio ours:echo --ratio rtpengine:echo "${args[@]}"
}
cmp s1.md "S1, PCMU relay-equivalent, $N_S1 calls" s1 ours rtpengine echo
cmp s2.md "S2, PCMU↔Opus transcoding, $N_S2 calls" s2 ours rtpengine
cmp knee-s1.md "S1, largest sustained N" knee-s1 ours rtpengine echo
cmp knee-s2.md "S2, largest sustained N" knee-s2 ours rtpengine

export ROUNDS N_S1 N_S2 HOLD WINDOW FACTOR START_S1 START_S2 NICE
# The file's tables are this run's; the notes on earlier runs below them are history
# and are carried over, the latest "This run" section becoming an "Earlier run".
history=$(mktemp)
if [ -f bench/RESULTS-voicebench.md ]; then
  awk '/^## (This run|Earlier run|Interrupted run)/ { h = 1 } h' bench/RESULTS-voicebench.md |
    sed '1s/^## This run/## Earlier run/' >"$history"
fi
{
  bench/voicebench-results.sh "$OUT"
  if [ -s "$history" ]; then echo; cat "$history"; fi
} >bench/RESULTS-voicebench.md.new
mv bench/RESULTS-voicebench.md.new bench/RESULTS-voicebench.md
rm -f "$history"
log "wrote bench/RESULTS-voicebench.md (earlier runs' notes kept below the tables)"
bench/voicebench-headline.sh
