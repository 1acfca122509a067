//go:build unix && !linux

package rtp

import (
	"net/netip"
	"time"
)

// drainBatch is how many datagrams one read takes: one, by recvfrom.
const drainBatch = 1

// batch is the memory of one drain where recvmmsg is missing: one
// datagram per read, stamped with the time of the drain.
type batch struct {
	bufs [1][1500]byte
	from netip.AddrPort
	size int
	n    int
}

func (b *batch) init() {}

func (b *batch) datagram(_ int, now time.Time) ([]byte, netip.AddrPort, time.Time) {
	return b.bufs[0][:b.size], b.from, now
}
