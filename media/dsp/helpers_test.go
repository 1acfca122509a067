package dsp

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// loadWAV reads a 16-bit mono PCM WAV from testdata (see testdata/README.md
// for how the files were made).
func loadWAV(t testing.TB, name string) []int16 {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	require.Greater(t, len(b), 12)
	require.Equal(t, "RIFF", string(b[0:4]))
	require.Equal(t, "WAVE", string(b[8:12]))
	for off := 12; off+8 <= len(b); {
		id := string(b[off : off+4])
		size := int(binary.LittleEndian.Uint32(b[off+4 : off+8]))
		body := b[off+8:]
		if id == "fmt " {
			require.Equal(t, uint16(1), binary.LittleEndian.Uint16(body[0:2]), "PCM format")
			require.Equal(t, uint16(1), binary.LittleEndian.Uint16(body[2:4]), "mono")
			require.Equal(t, uint32(16000), binary.LittleEndian.Uint32(body[4:8]), "rate")
			require.Equal(t, uint16(16), binary.LittleEndian.Uint16(body[14:16]), "bits")
		}
		if id == "data" {
			size = min(size, len(body))
			out := make([]int16, size/2)
			for i := range out {
				out[i] = int16(binary.LittleEndian.Uint16(body[2*i:]))
			}
			return out
		}
		off += 8 + size + size&1
	}
	t.Fatal("no data chunk")
	return nil
}

// frameLen is 20 ms at 16 kHz.
const frameLen = 320

// silence returns n zero samples.
func silence(n int) []int16 { return make([]int16, n) }

// concat joins signals.
func concat(parts ...[]int16) []int16 {
	var out []int16
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// whiteNoise returns n samples of Gaussian white noise with the given RMS
// (in int16 units), seeded for repeatability.
func whiteNoise(n int, rms float64, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]float64, n)
	for i := range out {
		out[i] = r.NormFloat64() * rms
	}
	return out
}

// pinkishNoise returns n samples of noise with a falling spectrum (white
// noise through a one-pole low-pass at ~300 Hz, like fan or road noise),
// normalised to the given RMS.
func pinkishNoise(n int, rms float64, seed uint64) []float64 {
	w := whiteNoise(n, 1, seed)
	a := 1 - math.Exp(-2*math.Pi*300/16000)
	var y float64
	for i, x := range w {
		y += a * (x - y)
		w[i] = y
	}
	return scaleTo(w, rms)
}

// scaleTo scales x to the given RMS.
func scaleTo(x []float64, rms float64) []float64 {
	cur := rmsF(x)
	for i := range x {
		x[i] *= rms / cur
	}
	return x
}

// rmsF is the RMS of x.
func rmsF(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v * v
	}
	return math.Sqrt(s / float64(len(x)))
}

// rms16 is the RMS of x in int16 units.
func rms16(x []int16) float64 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s / float64(len(x)))
}

// toFloat converts int16 samples to float64.
func toFloat(x []int16) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// toInt16 rounds and clips.
func toInt16(x []float64) []int16 {
	out := make([]int16, len(x))
	for i, v := range x {
		out[i] = int16(max(-32768, min(32767, math.Round(v))))
	}
	return out
}

// mix adds b to a (b may be shorter), returning a new slice.
func mix(a []float64, b []float64) []float64 {
	out := append([]float64(nil), a...)
	for i := range min(len(a), len(b)) {
		out[i] += b[i]
	}
	return out
}

// activeRMS is the RMS of the speech frames of x (frames within 30 dB of
// the loudest), the level against which SNR is set.
func activeRMS(x []int16) float64 {
	truth := speechTruth(x)
	var s float64
	var n int
	for f, sp := range truth {
		if sp {
			for _, v := range x[f*frameLen : (f+1)*frameLen] {
				s += float64(v) * float64(v)
			}
			n += frameLen
		}
	}
	return math.Sqrt(s / float64(n))
}

// speechTruth marks the 20 ms frames of a clean signal that hold speech:
// frame energy within 30 dB of the loudest frame.
func speechTruth(clean []int16) []bool {
	n := len(clean) / frameLen
	e := make([]float64, n)
	var peak float64
	for f := range n {
		e[f] = rms16(clean[f*frameLen : (f+1)*frameLen])
		peak = max(peak, e[f])
	}
	out := make([]bool, n)
	for f := range n {
		out[f] = e[f] > peak*math.Pow(10, -30.0/20)
	}
	return out
}

// tone returns n samples of a sine at freq Hz with the given amplitude.
func tone(n int, freq, amp float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = amp * math.Sin(2*math.Pi*freq*float64(i)/16000)
	}
	return out
}

// scorer counts frame decisions against the truth.
type scorer struct{ tp, fn, fp, tn int }

// add records one frame.
func (s *scorer) add(truth, got bool) {
	switch {
	case truth && got:
		s.tp++
	case truth:
		s.fn++
	case got:
		s.fp++
	default:
		s.tn++
	}
}

// recall is the fraction of speech frames detected.
func (s scorer) recall() float64 { return float64(s.tp) / float64(s.tp+s.fn) }

// falseAlarm is the fraction of non-speech frames flagged.
func (s scorer) falseAlarm() float64 { return float64(s.fp) / float64(s.fp+s.tn) }

// String formats the two rates.
func (s scorer) String() string {
	return fmt.Sprintf("recall %.3f false-alarm %.3f", s.recall(), s.falseAlarm())
}
