package dtmf

import (
	"math"
	"math/cmplx"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// tone renders a Q.23 pair: ms of low and high at peak levels lowDB and
// highDB (dBFS), with phases of its own.
func tone(rate int, low, high float64, ms int, lowDB, highDB float64, r *rand.Rand) []float64 {
	n := rate * ms / 1000
	al, ah := 32768*math.Pow(10, lowDB/20), 32768*math.Pow(10, highDB/20)
	pl, ph := r.Float64()*2*math.Pi, r.Float64()*2*math.Pi
	out := make([]float64, n)
	for i := range out {
		t := float64(i) / float64(rate)
		out[i] = al*math.Sin(2*math.Pi*low*t+pl) + ah*math.Sin(2*math.Pi*high*t+ph)
	}
	return out
}

// freqs returns the frequencies of key.
func freqs(key rune) (float64, float64) {
	for r, row := range keys {
		for c, k := range row {
			if k == key {
				return lowHz[r], highHz[c]
			}
		}
	}
	panic("not a key")
}

// keyTones renders digits as tones of ms, gap ms apart, each tone at
// level dBFS, after lead ms of silence.
func keyTones(rate int, digits string, ms, gap, lead int, level float64, r *rand.Rand) []float64 {
	out := make([]float64, rate*lead/1000)
	for _, k := range digits {
		lo, hi := freqs(k)
		out = append(out, tone(rate, lo, hi, ms, level, level, r)...)
		out = append(out, make([]float64, rate*gap/1000)...)
	}
	return out
}

// pcm16 rounds and clips x.
func pcm16(x []float64) []int16 {
	out := make([]int16, len(x))
	for i, v := range x {
		out[i] = int16(max(-32768, min(32767, math.Round(v))))
	}
	return out
}

// detect runs x through a detector in 20 ms frames and returns the keys.
func detect(t testing.TB, rate int, x []int16) string {
	d, err := New(rate)
	require.NoError(t, err)
	var b strings.Builder
	f := d.FrameSamples()
	for i := 0; i+f <= len(x); i += f {
		if k := d.Process(x[i : i+f]); k != 0 {
			b.WriteRune(k)
		}
	}
	// Flush with silence: a press at the end is reported already.
	return b.String()
}

// white is Gaussian noise at RMS level dBFS.
func white(n int, dB float64, r *rand.Rand) []float64 {
	s := 32768 * math.Pow(10, dB/20)
	out := make([]float64, n)
	for i := range out {
		out[i] = r.NormFloat64() * s
	}
	return out
}

func add(a, b []float64) []float64 {
	out := append([]float64(nil), a...)
	for i := range out {
		if i < len(b) {
			out[i] += b[i]
		}
	}
	return out
}

// TestBins: a half's bins combined into a window are the window's DTFT
// at the eight frequencies (up to the phase the two halves share), at
// the analysis rate (16 kHz input is averaged down to it first).
func TestBins(t *testing.T) {
	for _, rate := range []int{8000} {
		d, err := New(rate)
		require.NoError(t, err)
		r := rand.New(rand.NewPCG(1, 2))
		x := pcm16(white(d.frame, -20, r))
		var a, b [8]complex64
		var ea, eb float32
		d.goertzel(x[:d.half], &a, &ea)
		d.goertzel(x[d.half:], &b, &eb)
		for k, f := range append(lowHz[:], highHz[:]...) {
			w := 2 * math.Pi * f / float64(rate)
			var want complex128
			for n, v := range x {
				want += complex(float64(v), 0) * cmplx.Exp(complex(0, -w*float64(n)))
			}
			rot := complex(float64(d.rotRe[k]), float64(d.rotIm[k]))
			got := complex128(a[k]) + rot*complex128(b[k])
			require.InEpsilon(t, cmplx.Abs(want), cmplx.Abs(got), 1e-3, "rate %d, %v Hz", rate, f)
		}
		var e float64
		for _, v := range x {
			e += float64(v) * float64(v)
		}
		require.InEpsilon(t, e, float64(ea+eb), 1e-4)
	}
}

// TestAllDigits: every key of the pad, pressed for 100 ms with 60 ms
// between (what the simulated caller and most phones send), at 8 and
// 16 kHz, and at levels from -10 to -36 dBFS per tone, is recognised
// once, in order.
func TestAllDigits(t *testing.T) {
	const all = "123A456B789C*0#D"
	for _, rate := range []int{8000, 16000} {
		for _, level := range []float64{-10, -20, -36} {
			r := rand.New(rand.NewPCG(uint64(rate), uint64(-level)))
			x := pcm16(keyTones(rate, all, 100, 60, 50, level, r))
			require.Equal(t, all, detect(t, rate, x), "rate %d, %v dBFS", rate, level)
		}
	}
}

// TestRepeatedKey: the same key pressed twice is two presses; a 10 ms
// dropout in one press is not.
func TestRepeatedKey(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	x := pcm16(keyTones(8000, "55", 80, 50, 30, -15, r))
	require.Equal(t, "55", detect(t, 8000, x))
	lo, hi := freqs('7')
	y := append(tone(8000, lo, hi, 70, -15, -15, r), make([]float64, 80)...) // 10 ms gap
	y = append(y, tone(8000, lo, hi, 70, -15, -15, r)...)
	require.Equal(t, "7", detect(t, 8000, pcm16(append(y, make([]float64, 800)...))))
}

// TestDuration: a tone of 40 ms is recognised wherever it falls in the
// frames; one of 20 ms never is.
func TestDuration(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	lo, hi := freqs('9')
	for _, rate := range []int{8000, 16000} {
		for off := 0; off < rate/50; off += rate / 400 { // every 2.5 ms of phase against the frames
			lead := make([]float64, off+rate/50)
			long := append(append(lead, tone(rate, lo, hi, 40, -15, -15, r)...), make([]float64, rate/10)...)
			require.Equal(t, "9", detect(t, rate, pcm16(long)), "40 ms at offset %d", off)
			short := append(append(lead[:len(lead):len(lead)], tone(rate, lo, hi, 20, -15, -15, r)...), make([]float64, rate/10)...)
			require.Empty(t, detect(t, rate, pcm16(short)), "20 ms at offset %d", off)
		}
	}
}

// TestTwistAndLevel: twist within 8 dB normal and 4 dB reverse is taken,
// beyond it refused; a tone below MinLevel is refused.
func TestTwistAndLevel(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	lo, hi := freqs('0')
	pad := make([]float64, 800)
	for _, tc := range []struct {
		lowDB, highDB float64
		want          string
	}{
		{-10, -17, "0"}, // 7 dB normal twist
		{-10, -20, ""},  // 10 dB
		{-13, -10, "0"}, // 3 dB reverse twist
		{-16, -10, ""},  // 6 dB
		{-36, -36, "0"},
		{-44, -44, ""}, // below MinLevel
	} {
		x := append(append(pad[:len(pad):len(pad)], tone(8000, lo, hi, 100, tc.lowDB, tc.highDB, r)...), pad...)
		require.Equal(t, tc.want, detect(t, 8000, pcm16(x)), "low %v dB, high %v dB", tc.lowDB, tc.highDB)
	}
}

// TestOffFrequency: Q.24 asks a receiver to take tones within 1.5% of
// nominal; ours takes them within 1% and refuses a pair with a tone 5%
// off (not a DTMF frequency).
func TestOffFrequency(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	pad := make([]float64, 1600)
	for _, key := range "1D5" {
		lo, hi := freqs(key)
		for _, tc := range []struct {
			dev  float64
			want string
		}{{0.01, string(key)}, {-0.01, string(key)}, {0.05, ""}, {-0.05, ""}} {
			x := append(append(pad[:len(pad):len(pad)], tone(16000, lo*(1+tc.dev), hi*(1+tc.dev), 100, -15, -15, r)...), pad...)
			require.Equal(t, tc.want, detect(t, 16000, pcm16(x)), "key %c, %+.0f%%", key, 100*tc.dev)
		}
	}
}

// TestNoise: white noise alone gives no digit, even loud; digits in
// white noise at 5 dB below the tones are all found.
func TestNoise(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, rate := range []int{8000, 16000} {
		require.Empty(t, detect(t, rate, pcm16(white(rate*30, -15, r))), "30 s of noise at %d Hz", rate)
		x := keyTones(rate, "0123456789*#", 100, 60, 100, -16, r)
		// Each tone -16 dBFS peak: the pair's RMS is -16 dBFS; noise 5 dB under.
		require.Equal(t, "0123456789*#", detect(t, rate, pcm16(add(x, white(len(x), -21, r)))), "rate %d", rate)
	}
}

// TestHarmonicTalkOff: a voiced sound (a glottal pulse train through two
// formants) whose harmonics fall on a low and a high DTMF frequency does
// not pass for a key: its energy spreads over its other harmonics.
func TestHarmonicTalkOff(t *testing.T) {
	// f0 = 139.4 Hz: its 5th harmonic is 697 Hz, its 12th 1672.8 Hz; with
	// f0 = 100.7 Hz, the 12th is 1208 Hz and 7th 705 Hz.
	for _, f0 := range []float64{139.4, 100.7, 116.2, 232.3} {
		rate := 16000
		x := make([]float64, rate)
		for h := 1; float64(h)*f0 < 4000; h++ {
			f := float64(h) * f0
			// Formants near 700 and 1250 Hz, a -12 dB/octave source.
			g := 1 / float64(h*h) * (1 + 8*math.Exp(-math.Pow((f-700)/120, 2)) + 8*math.Exp(-math.Pow((f-1250)/150, 2)))
			for i := range x {
				x[i] += 20000 * g * math.Sin(2*math.Pi*f*float64(i)/float64(rate))
			}
		}
		require.Empty(t, detect(t, rate, pcm16(x)), "f0 %v Hz", f0)
	}
}

// TestNew refuses rates it does not analyse; Process ignores a frame of
// the wrong size.
func TestNew(t *testing.T) {
	_, err := New(44100)
	require.ErrorIs(t, err, ErrRate)
	d, err := New(8000)
	require.NoError(t, err)
	require.Equal(t, 160, d.FrameSamples())
	require.Zero(t, d.Process(make([]int16, 100)))
}

// TestProcessAllocatesNothing guards the per-frame path.
func TestProcessAllocatesNothing(t *testing.T) {
	d, err := New(16000)
	require.NoError(t, err)
	x := pcm16(keyTones(16000, "1", 100, 60, 0, -15, rand.New(rand.NewPCG(1, 1))))
	i := 0
	require.Zero(t, testing.AllocsPerRun(200, func() {
		d.Process(x[i : i+320])
		i = (i + 320) % (len(x) - 320)
	}))
}

// BenchmarkProcess is the detector's cost per 20 ms frame, on a stream
// of key presses in noise (every check runs on the tone frames).
func BenchmarkProcess(b *testing.B) {
	for _, rate := range []int{8000, 16000} {
		b.Run(map[int]string{8000: "8k", 16000: "16k"}[rate], func(b *testing.B) {
			r := rand.New(rand.NewPCG(13, 14))
			x := keyTones(rate, "0123456789", 100, 60, 0, -16, r)
			s := pcm16(add(x, white(len(x), -30, r)))
			d, err := New(rate)
			require.NoError(b, err)
			f := d.FrameSamples()
			n := len(s) / f
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				d.Process(s[(i%n)*f : (i%n+1)*f])
				i++
			}
		})
	}
}
