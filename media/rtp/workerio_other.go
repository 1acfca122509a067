//go:build !linux

package rtp

import (
	"net/netip"
	"sync/atomic"

	"github.com/voiced/voiced/media/pace"
)

// maxBatchPacket: there is no send batch here.
const maxBatchPacket = 0

// workerIO is Linux's io_uring per pacer worker; elsewhere no session
// has one.
type workerIO struct{ sends atomic.Uint64 }

func (*workerIO) add(*sock, []byte, netip.AddrPort) error { panic("rtp: no io_uring on this system") }

func (*workerIO) next() []byte { panic("rtp: no io_uring on this system") }

func (*workerIO) commit(*sock, int, netip.AddrPort) error { panic("rtp: no io_uring on this system") }

// NewPacerWorker is pace.Config.NewWorker for a pacer that drives
// sessions; without io_uring there is no per-worker work, so it returns
// nil and each packet is its own system call.
func NewPacerWorker(int) pace.Worker { return nil }
