package call

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The listener hears caller and agent summed (saturating); a silent agent
// adds nothing; a slow listener loses frames without holding up the tick
// or the other listener; Close ends every listener and refuses new ones.
func TestTapMixesAndDropsForSlowListeners(t *testing.T) {
	var tap Tap
	tap.Caller(make([]int16, 4)) // no listener: nothing to do
	fast, slow := tap.Listen(8), tap.Listen(1)
	tap.Agent([]int16{100, -100, 30000, -30000}, true)
	tap.Caller([]int16{1, 2, 30000, -30000})
	require.Equal(t, []int16{101, -98, 32767, -32768}, <-fast.C)
	tap.Agent([]int16{5, 5, 5, 5}, false)
	tap.Caller([]int16{7, 7, 7, 7})
	require.Equal(t, []int16{7, 7, 7, 7}, <-fast.C, "a silent agent adds nothing")
	require.Len(t, slow.C, 1, "the slow listener kept its first frame")
	require.EqualValues(t, 1, slow.Dropped(), "and lost the second")
	tap.Stop(slow)
	tap.Stop(slow)
	tap.Close()
	_, open := <-fast.C
	require.False(t, open, "the call's end closes the listener")
	require.Nil(t, tap.Listen(1))
}

// BenchmarkTap is a tick's cost (agent and caller frame, 20 ms at
// 16 kHz) with 0, 1 and 4 listeners that keep up.
func BenchmarkTap(b *testing.B) {
	for _, n := range []int{0, 1, 4} {
		b.Run(map[int]string{0: "listeners=0", 1: "listeners=1", 4: "listeners=4"}[n], func(b *testing.B) {
			var tap Tap
			ls := make([]*Listener, n)
			for i := range ls {
				ls[i] = tap.Listen(4)
			}
			frame := make([]int16, 320)
			b.ReportAllocs()
			for b.Loop() {
				tap.Agent(frame, true)
				tap.Caller(frame)
				for _, l := range ls {
					<-l.C
				}
			}
		})
	}
}
