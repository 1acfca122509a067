package jitter

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPLCHistoryIsTheLatestAudio: however frames of any length arrive,
// good or concealed, the history is the last samples played, oldest
// first, as a plain shifting buffer would hold them.
func TestPLCHistoryIsTheLatestAudio(t *testing.T) {
	for _, rate := range []int{8000, 16000} {
		p := NewPLC(rate)
		var played []int16
		rng := rand.New(rand.NewPCG(1, uint64(rate)))
		for range 2000 {
			f := make([]int16, []int{rate / 50, rate / 100, rate / 25, 7, 1, len(p.hist) + 3}[rng.IntN(6)])
			if rng.IntN(10) == 0 {
				p.Conceal(f)
			} else {
				for i := range f {
					f[i] = int16(rng.IntN(20000) - 10000)
				}
				p.Good(f)
			}
			played = append(played, f...)
			want := make([]int16, len(p.hist))
			copy(want[max(0, len(p.hist)-len(played)):], played[max(0, len(played)-len(p.hist)):])
			require.Equal(t, want, p.hist, "rate %d after %d samples", rate, len(played))
		}
	}
}
