#!/usr/bin/env bash
# Writes the Markdown of bench/RESULTS-voicebench.md from the result
# directory of bench/voicebench-full.sh (argument 1) to stdout.
set -euo pipefail
OUT=${1:-bench/results/voicebench}
rel=${OUT#bench/}
first=$(ls -d "$OUT"/*/ | head -1)
j() { jq -r "$1" "$first/results.json"; }
# mean of a figure over a system's runs: mean FILE-GLOB JQ
mean() {
  local files=("$OUT"/$1/results.json)
  [ -f "${files[0]}" ] || { echo 0; return; }
  jq -s "[.[] | ($2 // 0)] | add / length" "${files[@]}"
}
# best of a figure over a system's rounds: best FILE-GLOB JQ
best() {
  local files=("$OUT"/$1/results.json)
  [ -f "${files[0]}" ] || { echo 0; return; }
  jq -s "[.[] | ($2 // 0)] | max" "${files[@]}"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else printf "–" }'; }
# a knee cell: knee VALUE FILE-GLOB; 0 from runs whose first step failed
# reads "< START" (the search only steps up from --start).
knee() {
  if [ "$(printf %.0f "$1")" != 0 ]; then printf %.0f "$1"; return; fi
  local files=("$OUT"/$2/results.json)
  [ -f "${files[0]}" ] || { echo 0; return; }
  jq -rs 'if any(.[]; (.steps // []) | length > 0) then "< \([.[] | .steps[0].calls] | min)" else "0" end' "${files[@]}"
}
lastpass='([(.steps // [])[] | select(.pass)] | last | .window)'

span=$(jq -rs 'map(.started[0:16] | sub("T"; " ")) | "\(min) to \(max) UTC"' "$OUT"/*/results.json)
cat <<HEAD
# voicebench: our media node against rtpengine

Measured by \`make bench-full\` (bench/voicebench-full.sh) from $span, written
$(date -u +"%Y-%m-%d %H:%M UTC") at commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown). Machine: $(j .machine.cpu), $(j .machine.cores) cores,
$(j .machine.memory_gib) GiB, kernel $(j .machine.kernel), $(j .machine.go); rtpengine $(rtpengine --version 2>&1 | awk '{print $2}').
Each system under test ran pinned to one core (\`taskset -c \$SUT_CPU\`), voicebench to the other, all at
\`${NICE:-normal priority}\`, on a machine shared with other work (load average at the start of each run is in its
summary). Figures are means over the interleaved rounds, with the range in parentheses.

Exact command: \`ROUNDS=${ROUNDS:-2} N_S1=${N_S1:-200} N_S2=${N_S2:-30} HOLD=${HOLD:-20s} WINDOW=${WINDOW:-15s} FACTOR=${FACTOR:-1.4} START_S1=${START_S1:-100} START_S2=${START_S2:-20} bench/voicebench-full.sh\`;
every voicebench command line is listed under its table. Per-run summaries and charts are in [$rel]($rel/).

How the systems do comparable work: per call and per 20 ms each receives one RTP packet and sends one. Ours
terminates the call (audio-loopback agent: jitter buffer, decode, VAD and turn detection, recording, playout,
encode, node pacer; a G.711 call's agent listens and speaks at 8 kHz and an Opus call's at 16 kHz, which
libopus decodes to and encodes from, so neither resamples per frame); rtpengine relays the A leg to a B leg (S1) or decodes
PCMU and encodes Opus (S2); the echo floor sends each packet back from a goroutine per call. "µs per packet
in" is the system's CPU time over the window divided by the packets voicebench sent to it.

HEAD

s1o=$(mean 's1-ours-*' .window.target_cpu_us_per_packet)
s1r=$(mean 's1-rtpengine-*' .window.target_cpu_us_per_packet)
s2o=$(mean 's2-ours-*' .window.target_cpu_us_per_packet)
s2r=$(mean 's2-rtpengine-*' .window.target_cpu_us_per_packet)
k1o=$(best 'knee-s1-ours-*' .max_sustained_calls)
k1r=$(best 'knee-s1-rtpengine-*' .max_sustained_calls)
k2o=$(best 'knee-s2-ours-*' .max_sustained_calls)
k2r=$(best 'knee-s2-rtpengine-*' .max_sustained_calls)
k1e=$(best 'knee-s1-echo-*' .max_sustained_calls)
j1o=$(jq -s "max_by(.max_sustained_calls // 0) | $lastpass.jitter_d_p99_ms // 0" "$OUT"/knee-s1-ours-*/results.json 2>/dev/null || echo 0)
c1o=$(jq -s "max_by(.max_sustained_calls // 0) | $lastpass.target_cpu_percent // 0" "$OUT"/knee-s1-ours-*/results.json 2>/dev/null || echo 0)
# When no round sustained even the first step: that step's figures, best round.
firstfail='(.steps // [])[0] | "\(.window.calls // .calls // 0) calls: p99 |D| \(.window.jitter_d_p99_ms // 0 | . * 100 | round / 100) ms, loss \(.window.loss_percent // 0)%, \(.window.target_cpu_percent // 0 | round)% of the core"'
if awk -v k="$k1o" 'BEGIN { exit !(k > 0) }'; then
  atknee="At its largest sustained S1 load our node used $(printf %.0f "$c1o")% of its core with a p99 |D| of $(printf %.2f "$j1o") ms (goal < 2 ms)."
else
  atknee="Our node sustained none of the S1 steps; its first step failed in every round ($(jq -rs "[.[] | $firstfail] | join(\"; \")" "$OUT"/knee-s1-ours-*/results.json 2>/dev/null || echo "no results"))."
fi

# The most a hypervisor took from one core in any measured window.
steal=$(jq -s '[.[] | (.window.core_steal_percent // []), ((.steps // [])[] | .window.core_steal_percent // []) | max // 0] | max // 0' "$OUT"/*/results.json 2>/dev/null || echo 0)
stealnote=
if awk -v s="$steal" 'BEGIN { exit !(s >= 1) }'; then
  stealnote="The host's hypervisor took up to $(printf %.1f "$steal")% of one core in a measured window (steal, in each run's summary): its stalls delay the systems and voicebench alike, so on this host the knees measure the host as much as the systems; the CPU per packet, taken interleaved, is the comparison to read."
fi

cat <<SUM
## Headline

| | ours | rtpengine | ours / rtpengine | goal |
|---|---|---|---|---|
| S1 CPU µs per packet | $(printf %.2f "$s1o") | $(printf %.2f "$s1r") | $(ratio "$s1o" "$s1r") | ≤ 1 |
| S2 CPU µs per packet | $(printf %.2f "$s2o") | $(printf %.2f "$s2r") | $(ratio "$s2o" "$s2r") | ≤ 0.7 |
| S1 largest sustained N (one core, best round) | $(knee "$k1o" 'knee-s1-ours-*') | $(knee "$k1r" 'knee-s1-rtpengine-*') | $(ratio "$k1o" "$k1r") | ours ≥ 1000 |
| S2 largest sustained N (one core, best round) | $(knee "$k2o" 'knee-s2-ours-*') | $(knee "$k2r" 'knee-s2-rtpengine-*') | $(ratio "$k2o" "$k2r") | |

The Go UDP echo floor sustained $(knee "$k1e" 'knee-s1-echo-*') S1 calls. $atknee
${stealnote:+
$stealnote
}
SUM

for f in s1 s2 knee-s1 knee-s2; do
  [ -f "$OUT/$f.md" ] || continue
  sed "s#](\\([a-z0-9-]*\\.svg\\))#]($rel/\\1)#" "$OUT/$f.md" | sed 's/^## /## /'
  echo
done

for p in perf-s1 perf-s2; do
  [ -s "$OUT/$p.txt" ] || continue
  echo "## Profile of our node, ${p#perf-} (perf, top symbols)"
  echo
  echo "\`perf record -F 999 -g -p <voiced pid> -- sleep 8\` at the fixed load above; \`perf report --no-children\` by shared object, then by symbol (libopus is stripped in Debian, so its symbols show as addresses):"
  echo
  echo '```'
  cat "$OUT/$p.txt"
  echo '```'
  echo
done
