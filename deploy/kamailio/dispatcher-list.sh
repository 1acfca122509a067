#!/usr/bin/env bash
# Prints a Kamailio dispatcher list (set 1) of voiced media nodes.
# usage: deploy/kamailio/dispatcher-list.sh HOST:PORT [HOST:PORT...] > dispatcher.list
# Each node is a SIP address of `voiced media` or `voiced serve` (its
# --sip-addr, or --sip-advertise:port behind NAT). Kamailio re-reads the
# file on `kamcmd dispatcher.reload` (with the ctl module) or a restart.
set -euo pipefail
if [ $# -eq 0 ]; then
  echo "usage: $0 HOST:PORT [HOST:PORT...]" >&2
  exit 2
fi
echo "# setid destination flags priority attributes"
i=0
for node in "$@"; do
  i=$((i + 1))
  case "$node" in
    *:*) ;;
    *) echo "$0: $node: want HOST:PORT" >&2; exit 2 ;;
  esac
  echo "1 sip:$node 0 0 duid=node$i"
done
