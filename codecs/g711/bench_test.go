package g711

import (
	"math"
	"math/rand/v2"
	"testing"
)

// frameSamples is one 20 ms frame at 8 kHz.
const frameSamples = 160

// benchSignal returns one second of speech-like test audio (two tones under
// a slow envelope plus noise, peaking near -3 dBFS) cut into 20 ms frames,
// so the benchmarks walk the tables the way real calls do rather than
// hitting the same 160 entries every time.
func benchSignal() (pcm [][]int16, codes [][]byte) {
	rng := rand.New(rand.NewPCG(1, 2))
	for f := range 50 {
		frame := make([]int16, frameSamples)
		for i := range frame {
			n := float64(f*frameSamples + i)
			env := 0.5 + 0.5*math.Sin(2*math.Pi*3*n/8000)
			v := env * (14000*math.Sin(2*math.Pi*220*n/8000) + 6000*math.Sin(2*math.Pi*1330*n/8000))
			v += rng.NormFloat64() * 800
			frame[i] = int16(max(-32768, min(32767, v)))
		}
		c := make([]byte, frameSamples)
		EncodeULawTo(c, frame)
		pcm = append(pcm, frame)
		codes = append(codes, c)
	}
	return pcm, codes
}

// Sinks keep the destination buffers escaping, so the compiler cannot drop
// the conversions as stores nobody reads.
var (
	sinkCodes []byte
	sinkPCM   []int16
)

func benchEncode(b *testing.B, enc func([]byte, []int16) int) {
	pcm, _ := benchSignal()
	dst := make([]byte, frameSamples)
	b.ReportAllocs()
	b.SetBytes(frameSamples * 2)
	i := 0
	for b.Loop() {
		enc(dst, pcm[i])
		i++
		if i == len(pcm) {
			i = 0
		}
	}
	sinkCodes = dst
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/frameSamples, "ns/sample")
}

func benchDecode(b *testing.B, dec func([]int16, []byte) int) {
	_, codes := benchSignal()
	dst := make([]int16, frameSamples)
	b.ReportAllocs()
	b.SetBytes(frameSamples)
	i := 0
	for b.Loop() {
		dec(dst, codes[i])
		i++
		if i == len(codes) {
			i = 0
		}
	}
	sinkPCM = dst
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/frameSamples, "ns/sample")
}

func BenchmarkG711ULawEncode(b *testing.B) { benchEncode(b, EncodeULawTo) }
func BenchmarkG711ULawDecode(b *testing.B) { benchDecode(b, DecodeULawTo) }
func BenchmarkG711ALawEncode(b *testing.B) { benchEncode(b, EncodeALawTo) }
func BenchmarkG711ALawDecode(b *testing.B) { benchDecode(b, DecodeALawTo) }

func BenchmarkG711FormulaULawEncode(b *testing.B) { benchEncode(b, formulaEncodeULawTo) }
func BenchmarkG711FormulaULawDecode(b *testing.B) { benchDecode(b, formulaDecodeULawTo) }
func BenchmarkG711FormulaALawEncode(b *testing.B) { benchEncode(b, formulaEncodeALawTo) }
func BenchmarkG711FormulaALawDecode(b *testing.B) { benchDecode(b, formulaDecodeALawTo) }
