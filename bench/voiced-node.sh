# Sourced by the voicebench scripts: runs a local `voiced serve` as the
# media node under test, with an audio-loopback agent on a number.
#
#   start_voiced DIR [PREFIX...]   start serve (PREFIX e.g. "taskset -c 0 nice -n -10"),
#                                  set VOICED_PID, VOICED_KEY, VOICED_NUMBER,
#                                  VOICED_AGENT, VOICED_SIP, VOICED_HTTP
#   stop_voiced                    stop it
#   log MESSAGE...                 a timestamped line on stderr
#
# VOICED_BIN names the binary (default ./bin/voiced).
#
# The number sits on a VoIP connection that admits calls from 127.0.0.1
# (voicebench's address); every call gets serve's loopback agent, which
# plays each caller turn back through the full media path (RTP, jitter
# buffer, decode, VAD and turn detection, recording, playout, encode, the
# node pacer; a G.711 call at 8 kHz throughout, an Opus call at 16 kHz).
# The organization gets enough credit that no call is cut for balance, and
# SIP from 127.0.0.1 is trusted so the per-source rate limit does not
# throttle the load.

# NICE is the scheduling prefix for the systems under test and voicebench:
# left as set, else "chrt -f 10" as root where real-time priority is
# allowed (so other work on a shared machine cannot preempt them), else
# nothing.
if [ -z "${NICE+set}" ]; then
  NICE=
  [ "$(id -u)" -eq 0 ] && chrt -f 10 true 2>/dev/null && NICE="chrt -f 10"
fi

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

VOICED_SIP=${VOICED_SIP:-127.0.0.1:25060}
VOICED_HTTP=${VOICED_HTTP:-127.0.0.1:28080}
VOICED_RTP_PORTS=${VOICED_RTP_PORTS:-20000-29999}
VOICED_NUMBER=+14155550100

start_voiced() {
  local dir=$1
  shift
  mkdir -p "$dir"
  "$@" "${VOICED_BIN:-./bin/voiced}" serve --data-dir "$dir" --http-addr "$VOICED_HTTP" --sip-addr "$VOICED_SIP" \
    --rtp-ports "$VOICED_RTP_PORTS" --sip-trusted 127.0.0.1 --dev-credit-cents 100000000 \
    --realtime-loopback --call-loopback --realtime-org-sessions 0 --access-log=false --log-level warn \
    >"$dir/stdout" 2>"$dir/stderr" &
  VOICED_PID=$!
  for _ in $(seq 100); do
    curl -sf "http://$VOICED_HTTP/v1/healthz" >/dev/null 2>&1 && break
    sleep 0.1
  done
  VOICED_KEY=$(grep -o 'sk_live_[0-9a-f]*' "$dir/stdout" | head -1)
  if [ -z "$VOICED_KEY" ]; then
    echo "voiced serve did not start:" >&2
    cat "$dir/stderr" >&2
    return 1
  fi
  local conn num
  conn=$(voiced_api POST /v1/voip-connections '{"host":"127.0.0.1","port":5099,"allowed_inbound_addresses":["127.0.0.1"],"codecs":["PCMU","PCMA","opus"]}' | jq -r .id)
  VOICED_AGENT=$(voiced_api POST /v1/agents '{"name":"voicebench loopback","max_call_duration_seconds":14400}' | jq -r .id)
  num=$(voiced_api POST /v1/phone-numbers "{\"source\":\"voip\",\"number\":\"$VOICED_NUMBER\",\"voip_connection_id\":$conn}" | jq -r .id)
  voiced_api PATCH "/v1/phone-numbers/$num" "{\"inbound_agent_id\":$VOICED_AGENT}" | jq -e '.inbound_agent_id' >/dev/null
}

voiced_api() { # METHOD PATH [BODY]
  curl -sf -X "$1" -H "Authorization: Bearer $VOICED_KEY" -H 'Content-Type: application/json' \
    "http://$VOICED_HTTP$2" ${3:+-d "$3"}
}

stop_voiced() {
  [ -n "${VOICED_PID:-}" ] || return 0
  kill "$VOICED_PID" 2>/dev/null || true
  wait "$VOICED_PID" 2>/dev/null || true
  VOICED_PID=
}
