package resample

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// benchAudio is one second of a voice-like test signal at rate: a 140 Hz
// harmonic series with falling amplitudes plus a little noise, at about
// -12 dBFS. Every benchmark resamples the same audio.
func benchAudio(rate int) []int16 {
	rng := rand.New(rand.NewPCG(1, 2))
	s := make([]int16, rate)
	for i := range s {
		t := float64(i) / float64(rate)
		v := 0.0
		for h := 1; float64(h)*140 < float64(rate)/2; h++ {
			v += math.Sin(2*math.Pi*140*float64(h)*t) / float64(h)
		}
		s[i] = int16(3000*v + 300*rng.NormFloat64())
	}
	return s
}

func kHz(r int) string { return fmt.Sprintf("%dk", r/1000) }

// benchFrames measures p per 20 ms frame of benchAudio.
func benchFrames(b *testing.B, p processor, inRate, outRate int) {
	src := benchAudio(inRate)
	frame := inRate / 50
	dst := make([]int16, 4*outRate)
	b.ReportAllocs()
	b.SetBytes(int64(2 * frame))
	off := 0
	for b.Loop() {
		if _, err := p.ProcessTo(dst, src[off:off+frame]); err != nil {
			b.Fatal(err)
		}
		off += frame
		if off == len(src) {
			off = 0
		}
	}
}

func benchOurs(b *testing.B, inRate, outRate int) {
	r, err := New(inRate, outRate, QualityHigh)
	require.NoError(b, err)
	defer r.Close()
	benchFrames(b, r, inRate, outRate)
}

func BenchmarkResample8kto16k(b *testing.B)  { benchOurs(b, 8000, 16000) }
func BenchmarkResample16kto8k(b *testing.B)  { benchOurs(b, 16000, 8000) }
func BenchmarkResample24kto8k(b *testing.B)  { benchOurs(b, 24000, 8000) }
func BenchmarkResample24kto16k(b *testing.B) { benchOurs(b, 24000, 16000) }
func BenchmarkResample48kto16k(b *testing.B) { benchOurs(b, 48000, 16000) }
func BenchmarkResample16kto48k(b *testing.B) { benchOurs(b, 16000, 48000) }
func BenchmarkResample8kto48k(b *testing.B)  { benchOurs(b, 8000, 48000) }

// BenchmarkResampleLow runs QualityLow over the call pairs.
func BenchmarkResampleLow(b *testing.B) {
	for _, p := range callPairs {
		b.Run(kHz(p[0])+"to"+kHz(p[1]), func(b *testing.B) {
			r, err := New(p[0], p[1], QualityLow)
			require.NoError(b, err)
			defer r.Close()
			benchFrames(b, r, p[0], p[1])
		})
	}
}

// BenchmarkResampleTTS runs QualityHigh from espeak-ng's 22050 Hz to the
// analysis, WebSocket and telephone rates.
func BenchmarkResampleTTS(b *testing.B) {
	for _, p := range ttsPairs {
		b.Run("22.05kto"+kHz(p[1]), func(b *testing.B) { benchOurs(b, p[0], p[1]) })
	}
}

// BenchmarkNew measures designing the filter, which New does for every
// Resampler: the 22.05 kHz pairs have 160 or 320 phases.
func BenchmarkNew(b *testing.B) {
	for _, p := range [][2]int{{8000, 16000}, {48000, 16000}, {22050, 16000}, {22050, 24000}, {44100, 8000}} {
		b.Run(fmt.Sprintf("%dto%d", p[0], p[1]), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r, err := New(p[0], p[1], QualityHigh)
				if err != nil {
					b.Fatal(err)
				}
				_ = r.Close()
			}
		})
	}
}

// BenchmarkResampleStreams is benchFrames as a media node sees it: one
// 20 ms frame for each of many streams in turn (a pacer's tick), each
// stream with its own Resampler, input and output frame, so at 1,000
// streams a Resampler's memory has left the CPU's caches by its next
// frame. Per frame.
func BenchmarkResampleStreams(b *testing.B) {
	pairs := []struct {
		in, out int
		q       Quality
	}{{8000, 16000, QualityPhone}, {16000, 8000, QualityLow}}
	for _, p := range pairs {
		for _, n := range []int{1, 1000} {
			b.Run(fmt.Sprintf("%sto%s/%v/%d", kHz(p.in), kHz(p.out), p.q, n), func(b *testing.B) {
				audio := benchAudio(p.in)
				frame, outFrame := p.in/50, p.out/50
				rs := make([]*Resampler, n)
				src := make([][]int16, n)
				dst := make([][]int16, n)
				for i := range rs {
					r, err := New(p.in, p.out, p.q)
					require.NoError(b, err)
					defer r.Close()
					rs[i] = r
					src[i] = append([]int16(nil), audio[(i%50)*frame:(i%50+1)*frame]...)
					dst[i] = make([]int16, outFrame)
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if _, err := rs[i].ProcessTo(dst[i], src[i]); err != nil {
						b.Fatal(err)
					}
					if i++; i == n {
						i = 0
					}
				}
			})
		}
	}
}
