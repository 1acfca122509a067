package resample

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// eachPair runs f for every ordered pair of distinct supported rates.
func eachPair(t *testing.T, f func(t *testing.T, in, out int)) {
	for _, in := range inRates {
		for _, out := range rates {
			if in != out {
				t.Run(fmt.Sprintf("%dto%d", in, out), func(t *testing.T) { f(t, in, out) })
			}
		}
	}
}

func newHigh(t *testing.T, in, out int) *Resampler {
	t.Helper()
	r, err := New(in, out, QualityHigh)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// noise returns n samples of white noise at about -10 dBFS.
func noise(seed uint64, n int) []int16 {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	s := make([]int16, n)
	for i := range s {
		s[i] = int16(max(-32768, min(32767, 10000*rng.NormFloat64())))
	}
	return s
}

func TestNewRejectsUnsupported(t *testing.T) {
	for _, tc := range []struct{ in, out int }{
		{11025, 16000}, {16000, 22050}, {16000, 44100}, {0, 8000}, {8000, -8000}, {96000, 48000},
	} {
		t.Run(fmt.Sprintf("%dto%d", tc.in, tc.out), func(t *testing.T) {
			r, err := New(tc.in, tc.out, QualityHigh)
			require.Nil(t, r)
			require.ErrorIs(t, err, ErrUnsupportedRate)
			bad := tc.in
			if bad == 8000 || bad == 16000 {
				bad = tc.out
			}
			require.Contains(t, err.Error(), fmt.Sprintf("%d Hz", bad))
		})
	}
	r, err := New(8000, 16000, Quality(7))
	require.Nil(t, r)
	require.ErrorIs(t, err, ErrUnsupportedQuality)
	require.Contains(t, err.Error(), "7")
}

func TestSameRateCopies(t *testing.T) {
	for _, rate := range rates {
		r := newHigh(t, rate, rate)
		require.Zero(t, r.Delay())
		src := noise(1, rate/50)
		dst := make([]int16, len(src))
		n, err := r.ProcessTo(dst, src)
		require.NoError(t, err)
		require.Equal(t, src, dst[:n])
		n, err = r.Flush(nil)
		require.NoError(t, err)
		require.Zero(t, n)
		_, err = r.ProcessTo(dst[:1], src)
		require.ErrorIs(t, err, ErrShortBuffer)
	}
}

// TestFrameOutputCounts checks the documented output size: exactly
// len*out/in per 20 ms frame from the very first frame, and for ragged
// chunks never more than OutputLen with the running total exact.
func TestFrameOutputCounts(t *testing.T) {
	eachPair(t, func(t *testing.T, in, out int) {
		r := newHigh(t, in, out)
		src := noise(2, in)
		dst := make([]int16, out)
		frame := in / 50
		require.Equal(t, out/50, r.OutputLen(frame))
		for off := 0; off < len(src); off += frame {
			n, err := r.ProcessTo(dst, src[off:off+frame])
			require.NoError(t, err)
			require.Equal(t, out/50, n, "frame at %d", off)
		}

		r.Reset()
		rng := rand.New(rand.NewPCG(5, 6))
		total, consumed := 0, 0
		for consumed < len(src) {
			c := min(1+rng.IntN(700), len(src)-consumed)
			n, err := r.ProcessTo(dst, src[consumed:consumed+c])
			require.NoError(t, err)
			require.LessOrEqual(t, n, r.OutputLen(c))
			consumed += c
			total += n
			// Every output instant before the end of the input is out.
			require.Equal(t, (consumed*out+in-1)/in, total)
		}
	})
}

// TestChunkingInvariance is the frame-boundary continuity test: the stream
// cut into 20 ms frames, or into ragged chunks, gives bit for bit what one
// call over the whole signal gives, flush tail included.
func TestChunkingInvariance(t *testing.T) {
	eachPair(t, func(t *testing.T, in, out int) {
		src := noise(3, in) // one second: longer than the initial scratch
		whole := make([]int16, out+out/10)
		r := newHigh(t, in, out)
		n, err := r.ProcessTo(whole, src)
		require.NoError(t, err)
		m, err := r.Flush(whole[n:])
		require.NoError(t, err)
		whole = whole[:n+m]
		require.Len(t, whole, out+r.Delay())

		chunked := func(sizes func() int) []int16 {
			r := newHigh(t, in, out)
			var got []int16
			dst := make([]int16, out)
			for off := 0; off < len(src); {
				c := min(sizes(), len(src)-off)
				n, err := r.ProcessTo(dst, src[off:off+c])
				require.NoError(t, err)
				got = append(got, dst[:n]...)
				off += c
			}
			n, err := r.Flush(dst)
			require.NoError(t, err)
			return append(got, dst[:n]...)
		}
		require.Equal(t, whole, chunked(func() int { return in / 50 }), "20 ms frames")
		rng := rand.New(rand.NewPCG(7, 8))
		require.Equal(t, whole, chunked(func() int { return 1 + rng.IntN(400) }), "ragged chunks")
		require.Equal(t, whole, chunked(func() int { return 1 }), "one sample at a time")
	})
}

// TestNoDiscontinuity resamples a 440 Hz tone at -1 dBFS in 20 ms frames and
// checks that no step between consecutive output samples, at frame
// boundaries or elsewhere, exceeds the largest slope of the ideal sine
// (2*pi*f*A/rate) plus two LSBs of rounding.
func TestNoDiscontinuity(t *testing.T) {
	eachPair(t, func(t *testing.T, in, out int) {
		const f, a = 440.0, 29204.0
		src := make([]int16, in)
		for i := range src {
			src[i] = int16(math.Round(a * math.Sin(2*math.Pi*f*float64(i)/float64(in))))
		}
		r := newHigh(t, in, out)
		got := runFrames(t, r, src, in, out)
		limit := 2*math.Pi*f*a/float64(out) + 2
		start := 2 * r.Delay() // past the filter's start-up on silence
		for i := start + 1; i < len(got); i++ {
			step := math.Abs(float64(got[i]) - float64(got[i-1]))
			require.LessOrEqual(t, step, limit, "sample %d (frame boundary: %v)", i, i%(out/50) == 0)
		}
	})
}

// TestDelayMatchesImpulse measures the group delay as the position of the
// peak of the response to an impulse (its cross-correlation with the input
// impulse), refined by a parabola through the peak, and checks Delay()
// against it within one output sample.
func TestDelayMatchesImpulse(t *testing.T) {
	eachPair(t, func(t *testing.T, in, out int) {
		r := newHigh(t, in, out)
		// An input index that falls on an output instant (a multiple of
		// in/gcd); for the 22.05 and 44.1 kHz inputs, whose in/gcd is 147 or
		// 441, the first such index past 20 ms.
		step := in / gcd(in, out)
		at := 40 * step
		if at >= in/20 {
			at = (in/50 + step - 1) / step * step
		}
		src := make([]int16, in/10)
		src[at] = 20000
		dst := make([]int16, out)
		n, err := r.ProcessTo(dst, src)
		require.NoError(t, err)
		y := dst[:n]
		peak := 0
		for i := range y {
			if y[i] > y[peak] {
				peak = i
			}
		}
		y0, y1, y2 := float64(y[peak-1]), float64(y[peak]), float64(y[peak+1])
		measured := float64(peak) + 0.5*(y0-y2)/(y0-2*y1+y2) - float64(at*out/in)
		t.Logf("delay %d samples, measured %.2f (%.2f ms)", r.Delay(), measured, 1000*measured/float64(out))
		require.InDelta(t, float64(r.Delay()), measured, 1)
	})
}

// TestFlushIsTrailingSilence checks that Flush emits what Delay() more samples
// of silent input would, and leaves the Resampler as new.
func TestFlushIsTrailingSilence(t *testing.T) {
	eachPair(t, func(t *testing.T, in, out int) {
		src := noise(4, in/50*3)
		a, b := newHigh(t, in, out), newHigh(t, in, out)
		dst := make([]int16, out)

		_, err := a.ProcessTo(dst, src)
		require.NoError(t, err)
		tail := make([]int16, a.Delay())
		n, err := a.Flush(tail)
		require.NoError(t, err)
		require.Equal(t, a.Delay(), n)

		padded := append(append([]int16(nil), src...), make([]int16, in/10)...)
		m, err := b.ProcessTo(dst, padded)
		require.NoError(t, err)
		k := len(src) * out / in
		require.Greater(t, m, k+n)
		require.Equal(t, dst[k:k+n], tail)

		_, err = a.Flush(tail[:a.Delay()-1])
		require.ErrorIs(t, err, ErrShortBuffer)

		fresh := newHigh(t, in, out)
		want, got := make([]int16, out), make([]int16, out)
		n1, err := fresh.ProcessTo(want, src)
		require.NoError(t, err)
		n2, err := a.ProcessTo(got, src)
		require.NoError(t, err)
		require.Equal(t, want[:n1], got[:n2], "after Flush")
	})
}

func TestResetShortBufferClose(t *testing.T) {
	r := newHigh(t, 16000, 48000)
	src := noise(5, 320)
	want := make([]int16, 960)
	_, err := newHigh(t, 16000, 48000).ProcessTo(want, src)
	require.NoError(t, err)

	got := make([]int16, 960)
	_, err = r.ProcessTo(got, noise(6, 320))
	require.NoError(t, err)
	require.NoError(t, r.Reset())
	// A short dst consumes nothing.
	_, err = r.ProcessTo(got[:959], src)
	require.ErrorIs(t, err, ErrShortBuffer)
	require.ErrorContains(t, err, "959 samples for 960")
	n, err := r.ProcessTo(got, src)
	require.NoError(t, err)
	require.Equal(t, want, got[:n])

	require.NoError(t, r.Close())
	require.NoError(t, r.Close())
	_, err = r.ProcessTo(got, src)
	require.ErrorIs(t, err, ErrClosed)
	_, err = r.Flush(got)
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, r.Reset(), ErrClosed)
}

func TestProcessToDoesNotAllocate(t *testing.T) {
	for _, p := range append(append(callPairs, ttsPairs...), [2]int{16000, 16000}) {
		t.Run(kHz(p[0])+"to"+kHz(p[1]), func(t *testing.T) {
			r := newHigh(t, p[0], p[1])
			src := benchAudio(p[0])[:p[0]/50]
			dst := make([]int16, p[1]/50)
			allocs := testing.AllocsPerRun(100, func() {
				if _, err := r.ProcessTo(dst, src); err != nil {
					t.Fatal(err)
				}
			})
			require.Zero(t, allocs)
			tail := make([]int16, r.Delay())
			allocs = testing.AllocsPerRun(10, func() {
				if _, err := r.Flush(tail); err != nil {
					t.Fatal(err)
				}
			})
			require.Zero(t, allocs)
		})
	}
}

// TestGolden pins the output for a 100 ms chirp per pair. Outputs may differ
// by one LSB between the SIMD and portable inner products, so the comparison
// allows that. Regenerate with go test -run TestGolden -update.
func TestGolden(t *testing.T) {
	eachPair(t, func(t *testing.T, in, out int) {
		n := in / 10
		src := make([]int16, n)
		for i := range src {
			// A chirp from 100 Hz to the input Nyquist frequency.
			tt := float64(i) / float64(in)
			f1 := float64(in) / 2
			src[i] = int16(math.Round(20000 * math.Sin(2*math.Pi*(100*tt+(f1-100)*tt*tt*5))))
		}
		r := newHigh(t, in, out)
		dst := make([]int16, out/10+r.Delay())
		k, err := r.ProcessTo(dst, src)
		require.NoError(t, err)
		m, err := r.Flush(dst[k:])
		require.NoError(t, err)
		got := dst[:k+m]

		path := filepath.Join("testdata", fmt.Sprintf("chirp_%dto%d.s16le", in, out))
		if *update {
			require.NoError(t, os.MkdirAll("testdata", 0o755))
			b := make([]byte, 2*len(got))
			for i, v := range got {
				binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
			}
			require.NoError(t, os.WriteFile(path, b, 0o644))
		}
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Len(t, b, 2*len(got))
		for i := range got {
			want := int16(binary.LittleEndian.Uint16(b[2*i:]))
			require.InDelta(t, want, got[i], 1, "sample %d", i)
		}
	})
}

// TestInterleavedStreams runs many streams of one design frame by frame in
// turn, as a media node's pacer does, on several goroutines at once: the
// filter they share and the scratch they borrow must leave each stream's
// output exactly what it is alone, and closing one must not disturb the
// others.
func TestInterleavedStreams(t *testing.T) {
	for _, p := range []struct {
		in, out int
		q       Quality
	}{{8000, 16000, QualityPhone}, {16000, 8000, QualityLow}, {48000, 16000, QualityHigh}, {22050, 16000, QualityHigh}} {
		const streams, frames = 6, 40
		frame := p.in / 50
		want := make([][]int16, streams)
		src := make([][]int16, streams)
		for i := range streams {
			src[i] = noise(uint64(100+i), frame*frames)
			want[i] = runFrames(t, ours(t, p.in, p.out, p.q)(), src[i], p.in, p.out)
		}
		var wg sync.WaitGroup
		got := make([][]int16, streams)
		for g := range 2 { // two goroutines, each with half the streams
			wg.Add(1)
			go func() {
				defer wg.Done()
				rs := make([]*Resampler, 0, streams/2)
				for i := g; i < streams; i += 2 {
					r, err := New(p.in, p.out, p.q)
					if err != nil {
						t.Error(err)
						return
					}
					rs = append(rs, r)
				}
				dst := make([]int16, 4*p.out)
				for f := range frames {
					for j, r := range rs {
						i := g + 2*j
						if f == frames/2 && j == 0 {
							_ = r.Close() // the others go on
							continue
						}
						if r.closed {
							continue
						}
						n, err := r.ProcessTo(dst, src[i][f*frame:(f+1)*frame])
						if err != nil {
							t.Error(err)
							return
						}
						got[i] = append(got[i], dst[:n]...)
					}
				}
			}()
		}
		wg.Wait()
		for i := range streams {
			if i < 2 { // closed halfway
				require.Equal(t, want[i][:len(got[i])], got[i], "%d to %d stream %d", p.in, p.out, i)
				require.NotEmpty(t, got[i])
				continue
			}
			require.Equal(t, want[i], got[i], "%d to %d stream %d", p.in, p.out, i)
		}
		a, err := New(p.in, p.out, p.q)
		require.NoError(t, err)
		b, err := New(p.in, p.out, p.q)
		require.NoError(t, err)
		require.Same(t, &a.f.coefs[0], &b.f.coefs[0], "one design, one copy of its coefficients")
	}
}
