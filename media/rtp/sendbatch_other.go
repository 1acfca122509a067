//go:build !linux

package rtp

import (
	"net/netip"

	"github.com/voiced/voiced/media/pace"
)

// maxBatchPacket: there is no send batch here.
const maxBatchPacket = 0

// sendBatch is Linux's io_uring send batch; elsewhere no session has one.
type sendBatch struct{}

func (*sendBatch) add(*sock, []byte, netip.AddrPort) error { panic("rtp: no send batch on this system") }

// NewPacerWorker is pace.Config.NewWorker for a pacer that drives
// sessions; without io_uring there is no per-worker work, so it returns
// nil and each packet is its own system call.
func NewPacerWorker(int) pace.Worker { return nil }
