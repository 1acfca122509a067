package resample

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/voiced/voiced/codecs/resample/internal/soxrref"
	"github.com/voiced/voiced/codecs/resample/internal/speexref"
)

// Side-by-side references: libspeexdsp at quality 5 and 10 and libsoxr HQ run
// on the same audio and pairs as BenchmarkResample*. Every benchmark also
// reports, measured once before timing:
//   - alias-dB: the strongest alias or image of the stopTones (worstSpur);
//   - passband-dB: the largest gain deviation from 0 dB up to 0.45 of the
//     lower rate (passbandGain);
//   - lag-ms: the most output held back behind len(input)*ratio over two
//     seconds of 20 ms frames after the first 100 ms (maxLag); the
//     latency a 20 ms frame pipeline must add to never run dry.

// measureQuality measures newP and returns a func reporting the metrics
// above; call it after the timed loop, which discards metrics reported
// before it.
func measureQuality(b *testing.B, newP func() processor, inRate, outRate int) (report func()) {
	worst, _ := worstSpur(b, newP, inRate, outRate)
	lo, hi := passbandGain(b, newP, inRate, outRate, 0.45)
	lag := maxLag(b, newP(), inRate, outRate)
	return func() {
		b.ReportMetric(worst, "alias-dB")
		b.ReportMetric(math.Max(-lo, hi), "passband-dB")
		b.ReportMetric(lag, "lag-ms")
	}
}

// maxLag returns, in ms, the largest shortfall of the output produced so far
// against the input consumed times outRate/inRate, once the first 100 ms are
// past.
func maxLag(tb testing.TB, p processor, inRate, outRate int) float64 {
	src := benchAudio(inRate)
	frame := inRate / 50
	dst := make([]int16, 4*outRate)
	in, out, worst := 0, 0, 0
	for i := range 100 {
		off := (i * frame) % len(src)
		n, err := p.ProcessTo(dst, src[off:off+frame])
		require.NoError(tb, err)
		in += frame
		out += n
		if i >= 5 {
			worst = max(worst, in*outRate/inRate-out)
		}
	}
	return 1000 * float64(worst) / float64(outRate)
}

func speex(tb testing.TB, inRate, outRate, q int) func() processor {
	return func() processor {
		r, err := speexref.New(inRate, outRate, q)
		require.NoError(tb, err)
		tb.Cleanup(func() { _ = r.Close() })
		return r
	}
}

func soxr(tb testing.TB, inRate, outRate int) func() processor {
	return func() processor {
		r, err := soxrref.New(inRate, outRate, soxrref.HQ)
		require.NoError(tb, err)
		tb.Cleanup(func() { _ = r.Close() })
		return r
	}
}

func benchReference(b *testing.B, newP func(tb testing.TB, in, out int) func() processor) {
	for _, p := range callPairs {
		b.Run(kHz(p[0])+"to"+kHz(p[1]), func(b *testing.B) {
			mk := newP(b, p[0], p[1])
			report := measureQuality(b, mk, p[0], p[1])
			benchFrames(b, mk(), p[0], p[1])
			report()
		})
	}
}

func BenchmarkResampleSpeexQ5(b *testing.B) {
	benchReference(b, func(tb testing.TB, in, out int) func() processor { return speex(tb, in, out, 5) })
}

func BenchmarkResampleSpeexQ10(b *testing.B) {
	benchReference(b, func(tb testing.TB, in, out int) func() processor { return speex(tb, in, out, 10) })
}

func BenchmarkResampleSoxrHQ(b *testing.B) { benchReference(b, soxr) }

// BenchmarkResampleQuality reports the same metrics for ours (QualityHigh),
// so the four implementations line up in one -bench run.
func BenchmarkResampleQuality(b *testing.B) {
	benchReference(b, func(tb testing.TB, in, out int) func() processor { return ours(tb, in, out, QualityHigh) })
}
