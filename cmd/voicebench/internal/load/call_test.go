package load

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/voiced/voiced/cmd/voicebench/internal/sdp"
)

// A generator that sends late must not make an echo look jittery: with
// the target returning our own packets, |D| follows the real send times.
func TestSendTimedJitterIgnoresOwnLateness(t *testing.T) {
	for _, own := range []bool{true, false} {
		c := &call{ownSeq: own}
		c.rx.codec = sdp.PCMU
		c.rx.stream.Reset(8000)
		var ds []int64
		for i := range 50 {
			late := int64(0)
			if i%5 == 0 {
				late = 4e6 // the generator's tick ran 4 ms late
			}
			sent := int64(i)*20e6 + late
			seq := uint16(65500 + i) // wraps
			c.recordSend(seq, sent)
			ds = append(ds, c.receive(0, seq, uint32(160*i), 1, nil, sent+300e3)) // a constant 0.3 ms path
		}
		if own {
			require.Equal(t, int64(-1), ds[0], "no previous packet")
			for _, d := range ds[1:] {
				require.Zero(t, d)
			}
			continue
		}
		// From RTP timestamps alone the lateness shows as 4 ms swings.
		require.Equal(t, int64(4e6), ds[5])
		require.Equal(t, int64(4e6), ds[6])
	}
}

func TestSendTimedUnknownPacket(t *testing.T) {
	c := &call{ownSeq: true}
	c.rx.codec = sdp.PCMU
	c.rx.stream.Reset(8000)
	c.recordSend(1, 100)
	require.Equal(t, int64(-1), c.receive(0, 1, 0, 1, nil, 200))
	// seq 2 was never recorded (or its slot was overwritten): no |D|.
	require.Equal(t, int64(-1), c.receive(0, 2, 160, 1, nil, 20e6+200))
	c.recordSend(2+sentRing, 5)
	require.Equal(t, int64(-1), c.receive(0, 2+sentRing, 160*(2+sentRing), 1, nil, 30e6))
}
