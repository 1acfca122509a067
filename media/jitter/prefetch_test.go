package jitter

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"github.com/voiced/voiced/media/prefetch"
)

// TestPlayoutAddHot: after a frame, the hot list names what the next Push
// and ReadFrame touch: the Playout, the Buffer, the slots of the next
// packet and the next frame, the decoder and its concealer's history
// where the next frame goes; without prefetching it names nothing.
func TestPlayoutAddHot(t *testing.T) {
	pkts := g711Stream(sine(8000, 300, 8000, 1600))
	b := newBuffer(t, Config{})
	g := NewG711(false)
	p, err := NewPlayout(b, g)
	require.NoError(t, err)
	frame := make([]int16, 160)
	for i := range 5 {
		b.Push(Packet{Seq: uint16(i), Timestamp: uint32(i * 160), Samples: 160, Payload: pkts[i]}, t0.Add(ms(float64(20*i))))
		_, err := p.ReadFrame(t0.Add(ms(float64(20*i+25))), frame)
		require.NoError(t, err)
	}
	var l prefetch.List
	p.AddHot(&l)
	if !prefetch.Enabled {
		require.Empty(t, l.Addrs())
		return
	}
	n := uint64(len(b.slots))
	c := &g.plc
	for name, a := range map[string]uintptr{
		"playout":   prefetch.Addr(p),
		"buffer":    prefetch.Addr(b),
		"stats":     prefetch.Addr(&b.st),
		"next push": prefetch.Addr(&b.slots[uint64(b.highSeq+1)%n]),
		"next pop":  prefetch.Addr(&b.slots[uint64(b.lastSeq+1)%n]) + unsafe.Sizeof(entry{}) - 1,
		"decoder":   prefetch.Addr(g),
		"history":   prefetch.Addr(&c.histBuf[c.histOff+len(c.hist)]),
		"window":    prefetch.Addr(&b.win[b.winPos]),
	} {
		require.True(t, l.Has(a), "%s not listed", name)
	}
	require.False(t, l.Has(prefetch.Addr(&b.scratch[len(b.scratch)-1])), "the target's scratch is not per packet")
}
