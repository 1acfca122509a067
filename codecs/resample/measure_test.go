package resample

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// Shared measurement helpers for the quality tests and the side-by-side
// benchmarks against libspeexdsp and libsoxr.

var rates = []int{8000, 16000, 24000, 48000}

// inRates are the supported input rates: rates plus the synthesizer and media
// file rates, which are never outputs.
var inRates = []int{8000, 16000, 24000, 48000, 22050, 44100}

// ttsPairs are the conversions from espeak-ng's 22050 Hz output to the
// analysis and WebSocket rates.
var ttsPairs = [][2]int{{22050, 16000}, {22050, 24000}, {22050, 8000}, {22050, 48000}}

// callPairs are the conversions the call path uses (DESIGN.md section 4).
var callPairs = [][2]int{
	{8000, 16000}, {16000, 8000}, {24000, 8000}, {24000, 16000},
	{48000, 16000}, {16000, 24000}, {16000, 48000}, {8000, 48000},
}

// processor is anything that resamples a stream chunk by chunk.
type processor interface {
	ProcessTo(dst, src []int16) (int, error)
}

const toneAmp = 16384 // -6 dBFS

// tone returns n samples of a sine of frequency f at rate fs.
func tone(f float64, fs, n int) []int16 {
	s := make([]int16, n)
	for i := range s {
		s[i] = int16(math.Round(toneAmp * math.Sin(2*math.Pi*f*float64(i)/float64(fs))))
	}
	return s
}

// runFrames feeds src through p in 20 ms frames and returns all the output.
func runFrames(tb testing.TB, p processor, src []int16, inRate, outRate int) []int16 {
	tb.Helper()
	frame := inRate / 50
	out := make([]int16, 0, len(src)*outRate/inRate+outRate)
	dst := make([]int16, 4*outRate) // room for a bursty reference
	for off := 0; off < len(src); off += frame {
		n, err := p.ProcessTo(dst, src[off:min(off+frame, len(src))])
		require.NoError(tb, err)
		out = append(out, dst[:n]...)
	}
	return out
}

// amplitude estimates the amplitude of the component at frequency f in x
// (sampled at fs) with a 4-term Blackman-Harris window (sidelobes below
// -92 dB) and a single-bin DFT at exactly f.
func amplitude(x []int16, f float64, fs int) float64 {
	n := len(x)
	var re, im, wsum float64
	for i, v := range x {
		p := 2 * math.Pi * float64(i) / float64(n-1)
		w := 0.35875 - 0.48829*math.Cos(p) + 0.14128*math.Cos(2*p) - 0.01168*math.Cos(3*p)
		s, c := math.Sincos(2 * math.Pi * f * float64(i) / float64(fs))
		re += w * float64(v) * c
		im -= w * float64(v) * s
		wsum += w
	}
	return 2 * math.Hypot(re, im) / wsum
}

func dB(ratio float64) float64 { return 20 * math.Log10(ratio) }

// analysisWindow returns the part of out used for measurements: half a second
// starting 200 ms in, past any start-up transient or reference latency.
func analysisWindow(out []int16, outRate int) []int16 {
	return out[outRate/5 : outRate/5+outRate/2]
}

// fold maps a frequency onto [0, fs/2] as sampling at fs does.
func fold(f float64, fs int) float64 {
	a := math.Mod(f, float64(fs))
	if a > float64(fs)/2 {
		a = float64(fs) - a
	}
	return a
}

// spurs returns the frequencies at which an ideal-less resampler from inRate to
// outRate would leave unwanted energy for an input tone at f: for a tone above
// the output Nyquist frequency, its alias; for upsampling, the images
// k*inRate +- f below the output Nyquist frequency.
func spurs(f float64, inRate, outRate int) []float64 {
	var s []float64
	if f > float64(outRate)/2 {
		return append(s, fold(f, outRate))
	}
	for k := 1; float64(k*inRate)-f < float64(outRate)/2; k++ {
		for _, img := range []float64{float64(k*inRate) - f, float64(k*inRate) + f} {
			if img < float64(outRate)/2 {
				s = append(s, img)
			}
		}
	}
	return s
}

// stopTones returns test tones whose spurs must be rejected: for downsampling,
// tones spread between the output and the input Nyquist frequencies; for
// upsampling, tones spread over the input band. Tones whose alias would land
// within 50 Hz of DC or Nyquist are nudged, since a component there is not
// separable from the window's main lobe; the nudge is inwards, so the tone
// stays inside its range.
func stopTones(inRate, outRate int) []float64 {
	lo, hi := 0.0, float64(inRate)/2
	if outRate < inRate {
		lo = float64(outRate) / 2
	}
	var ts []float64
	for _, frac := range []float64{0.004, 0.023, 0.11, 0.29, 0.47, 0.66, 0.83, 0.97, 0.996} {
		f := lo + frac*(hi-lo)
		for _, s := range spurs(f, inRate, outRate) {
			if s < 50 || s > float64(outRate)/2-50 {
				if frac < 0.5 {
					f += 311
				} else {
					f -= 311
				}
				break
			}
		}
		ts = append(ts, f)
	}
	return ts
}

// silenceDB stands for a spur that left no output at all: every output sample
// of the analysis window rounded to zero at that frequency.
const silenceDB = -140

// worstSpur measures, over stopTones, the strongest alias or image relative
// to the input tone, in dB (negative: below the tone; silenceDB when nothing
// was measurable). newP returns a fresh processor for each tone.
func worstSpur(tb testing.TB, newP func() processor, inRate, outRate int) (worst, atTone float64) {
	tb.Helper()
	worst = silenceDB
	for _, f := range stopTones(inRate, outRate) {
		out := runFrames(tb, newP(), tone(f, inRate, inRate), inRate, outRate)
		w := analysisWindow(out, outRate)
		for _, s := range spurs(f, inRate, outRate) {
			if d := dB(amplitude(w, s, outRate) / toneAmp); d > worst {
				worst, atTone = d, f
			}
		}
	}
	return worst, atTone
}

// passbandGain measures the gain in dB of tones from 50 Hz to edge*lower rate
// and returns the extremes.
func passbandGain(tb testing.TB, newP func() processor, inRate, outRate int, edge float64) (lo, hi float64) {
	tb.Helper()
	lo, hi = math.Inf(1), math.Inf(-1)
	top := edge * float64(min(inRate, outRate))
	const steps = 20
	for i := range steps + 1 {
		f := 50 + (top-50)*float64(i)/steps
		out := runFrames(tb, newP(), tone(f, inRate, inRate), inRate, outRate)
		g := dB(amplitude(analysisWindow(out, outRate), f, outRate) / toneAmp)
		lo, hi = min(lo, g), max(hi, g)
	}
	return lo, hi
}
