#!/usr/bin/env bash
# Installs the Debian packages voiced needs to build, test or benchmark.
# usage: deploy/debian-deps.sh build|test|bench
# libopusfile-dev is not linked (builds use -tags nolibopusfile) but lets a
# plain `go build ./...` without the tag compile too.
# As root it installs what is missing with apt-get; otherwise it prints the
# exact apt-get line and fails, so `make` stops with something to copy.
set -euo pipefail

build=(gcc g++ pkg-config libopus-dev libopusfile-dev libsoxr-dev libwebrtc-audio-processing-dev libmp3lame-dev libspeexdsp-dev libespeak-ng-dev espeak-ng-data libpocketsphinx-dev pocketsphinx-en-us)
test=("${build[@]}" sox libsox-fmt-mp3 espeak-ng sip-tester baresip-core chromium coturn tshark prometheus rtpengine-daemon kamailio)
bench=("${test[@]}" wrk jq curl linux-perf)

case "${1:-build}" in
  build) want=("${build[@]}") ;;
  test) want=("${test[@]}") ;;
  bench) want=("${bench[@]}") ;;
  *) echo "usage: $0 build|test|bench" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

line="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "voiced needs Debian packages that are not installed; run as root:" >&2
  echo "  apt-get update && $line" >&2
  exit 1
fi
echo "installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
$line >/dev/null
