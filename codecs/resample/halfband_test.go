package resample

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// halfBandPairs are the pairs QualityPhone gives a half-band filter.
var halfBandPairs = [][2]int{{8000, 16000}, {24000, 48000}}

func newPhone(t testing.TB, in, out int) *Resampler {
	t.Helper()
	r, err := New(in, out, QualityPhone)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// TestPhoneRejection: images of tones up to QualityPhone's passband edge
// (0.40 of the input rate) are at least 60 dB down, the passband is flat
// within 0.1 dB, and the image of a tone in the transition band (0.45 of
// the input rate, 3.6 kHz at 8 kHz) is still 15 dB down (about 20 dB).
func TestPhoneRejection(t *testing.T) {
	for _, p := range halfBandPairs {
		in, out := p[0], p[1]
		t.Run(fmt.Sprintf("%dto%d", in, out), func(t *testing.T) {
			worst, at := float64(silenceDB), 0.0
			for _, frac := range []float64{0.004, 0.05, 0.11, 0.2, 0.29, 0.35, 0.40, 0.425} {
				f := frac * float64(in)
				w := analysisWindow(runFrames(t, newPhone(t, in, out), tone(f, in, in), in, out), out)
				for _, s := range spurs(f, in, out) {
					if d := dB(amplitude(w, s, out) / toneAmp); d > worst {
						worst, at = d, f
					}
				}
			}
			t.Logf("worst image %.1f dB (tone %.0f Hz)", worst, at)
			require.Less(t, worst, -60.0, "tone %.0f Hz", at)

			lo, hi := passbandGain(t, ours(t, in, out, QualityPhone), in, out, 0.425)
			t.Logf("passband gain %+.4f..%+.4f dB", lo, hi)
			require.Greater(t, lo, -0.1)
			require.Less(t, hi, 0.1)

			f := 0.45 * float64(in)
			w := analysisWindow(runFrames(t, newPhone(t, in, out), tone(f, in, in), in, out), out)
			img := dB(amplitude(w, float64(in)-f, out) / toneAmp)
			t.Logf("image of a %.0f Hz tone at %.0f Hz: %.1f dB", f, float64(in)-f, img)
			require.Less(t, img, -15.0)
		})
	}
}

// TestPhoneMatchesPolyphase runs the half-band path (an input sample
// copied through, one inner product per input) against the generic
// polyphase loop over the same coefficients, with and without the
// assembly: the copied samples are exact and the rest agree within one
// LSB, for 20 ms frames and ragged chunks.
func TestPhoneMatchesPolyphase(t *testing.T) {
	for _, p := range halfBandPairs {
		in, out := p[0], p[1]
		t.Run(fmt.Sprintf("%dto%d", in, out), func(t *testing.T) {
			src := noise(11, in/2)
			half := runFrames(t, newPhone(t, in, out), src, in, out)
			generic := newPhone(t, in, out)
			require.True(t, generic.f.half)
			generic.f.half = false // the same filter through runUp or polyFMA
			want := runFrames(t, generic, src, in, out)
			require.Len(t, half, len(want))
			for i := range want {
				if i%2 == 0 {
					require.Equal(t, want[i], half[i], "copied sample %d", i)
				} else {
					require.InDelta(t, want[i], half[i], 1, "sample %d", i)
				}
			}
			if hasFMA {
				hasFMA = false
				portable := runFrames(t, newPhone(t, in, out), src, in, out)
				hasFMA = true
				for i := range want {
					require.InDelta(t, half[i], portable[i], 1, "portable sample %d", i)
				}
			}
			rng := rand.New(rand.NewPCG(5, 6))
			r := newPhone(t, in, out)
			var got []int16
			dst := make([]int16, 2*len(src))
			for off := 0; off < len(src); {
				c := min(1+rng.IntN(300), len(src)-off)
				n, err := r.ProcessTo(dst, src[off:off+c])
				require.NoError(t, err)
				got = append(got, dst[:n]...)
				off += c
			}
			require.Equal(t, half, got, "ragged chunks")
		})
	}
}

// TestPhoneDelayAndFlush: Delay() is where an impulse peaks (less than
// QualityLow's), Flush emits what that many samples of silence would, and
// the steady state allocates nothing.
func TestPhoneDelayAndFlush(t *testing.T) {
	for _, p := range halfBandPairs {
		in, out := p[0], p[1]
		t.Run(fmt.Sprintf("%dto%d", in, out), func(t *testing.T) {
			r := newPhone(t, in, out)
			low, err := New(in, out, QualityLow)
			require.NoError(t, err)
			require.Equal(t, 28, r.Delay()) // QualityLow's is 40
			require.Equal(t, 40, low.Delay())

			src := make([]int16, in/10)
			src[in/50] = 20000
			dst := make([]int16, out/10)
			n, err := r.ProcessTo(dst, src)
			require.NoError(t, err)
			peak := 0
			for i := range dst[:n] {
				if dst[i] > dst[peak] {
					peak = i
				}
			}
			require.Equal(t, in/50*2+r.Delay(), peak)

			a, b := newPhone(t, in, out), newPhone(t, in, out)
			sig := noise(12, in/50*3)
			_, err = a.ProcessTo(dst, sig)
			require.NoError(t, err)
			tail := make([]int16, a.Delay())
			m, err := a.Flush(tail)
			require.NoError(t, err)
			require.Equal(t, a.Delay(), m)
			padded := append(append([]int16(nil), sig...), make([]int16, in/50)...)
			wide := make([]int16, 2*len(padded))
			k, err := b.ProcessTo(wide, padded)
			require.NoError(t, err)
			require.Greater(t, k, 2*len(sig)+m)
			require.Equal(t, wide[2*len(sig):2*len(sig)+m], tail)

			frame := benchAudio(in)[:in/50]
			require.Zero(t, testing.AllocsPerRun(100, func() {
				if _, err := r.ProcessTo(dst, frame); err != nil {
					t.Fatal(err)
				}
			}))
		})
	}
}

// TestPhoneElsewhereIsLow: pairs other than upsampling by two get
// QualityLow's filter, sample for sample.
func TestPhoneElsewhereIsLow(t *testing.T) {
	for _, p := range [][2]int{{16000, 8000}, {8000, 24000}, {24000, 16000}} {
		in, out := p[0], p[1]
		src := noise(13, in/5)
		got := runFrames(t, newPhone(t, in, out), src, in, out)
		want := runFrames(t, ours(t, in, out, QualityLow)(), src, in, out)
		require.Equal(t, want, got, "%d to %d", in, out)
	}
}

// BenchmarkResamplePhone compares QualityPhone with QualityLow on the
// pairs it changes, per 20 ms frame.
func BenchmarkResamplePhone(b *testing.B) {
	for _, p := range halfBandPairs {
		for _, q := range []Quality{QualityLow, QualityPhone} {
			b.Run(fmt.Sprintf("%s/%v", kHz(p[0])+"to"+kHz(p[1]), q), func(b *testing.B) {
				r, err := New(p[0], p[1], q)
				if err != nil {
					b.Fatal(err)
				}
				benchFrames(b, r, p[0], p[1])
			})
		}
	}
}
