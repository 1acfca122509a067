package media

import (
	"math/rand/v2"
	"testing"
)

// benchN is one 20 ms frame at 48 kHz, the largest frame the engine moves.
const benchN = 960

func benchAudio(seed uint64) []int16 {
	rng := rand.New(rand.NewPCG(seed, 1))
	s := make([]int16, benchN)
	for i := range s {
		s[i] = int16(rng.NormFloat64() * 8000)
	}
	return s
}

var sinkSamples []int16

func perSample(b *testing.B, n int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/sample")
}

func BenchmarkMixTo(b *testing.B) {
	a, c, dst := benchAudio(1), benchAudio(2), make([]int16, benchN)
	b.ReportAllocs()
	for b.Loop() {
		MixTo(dst, a, c)
	}
	sinkSamples = dst
	perSample(b, benchN)
}

func BenchmarkMixInto(b *testing.B) {
	src, dst := benchAudio(1), benchAudio(2)
	b.ReportAllocs()
	for b.Loop() {
		MixInto(dst, src)
	}
	sinkSamples = dst
	perSample(b, benchN)
}

// BenchmarkGainQ15 and BenchmarkGainFloat compare the fixed-point gain
// with the float reference (applyGainFloat in gain_test.go) on the same
// frame.
func BenchmarkGainQ15(b *testing.B) {
	frame := benchAudio(3)
	g := GainFromDB(-0.5) // near unity: little decay over b.N runs
	b.ReportAllocs()
	for b.Loop() {
		g.Apply(frame)
	}
	sinkSamples = frame
	perSample(b, benchN)
}

func BenchmarkGainFloat(b *testing.B) {
	frame := benchAudio(3)
	b.ReportAllocs()
	for b.Loop() {
		applyGainFloat(frame, -0.5)
	}
	sinkSamples = frame
	perSample(b, benchN)
}

var sinkLevel float64

func BenchmarkRMS(b *testing.B) {
	frame := benchAudio(4)
	b.ReportAllocs()
	for b.Loop() {
		sinkLevel = DBFS(frame)
	}
	perSample(b, benchN)
}

// BenchmarkRing writes 7 ms chunks (as a TTS stream might arrive) and
// reads 20 ms frames at 16 kHz; one op is one frame through the ring.
func BenchmarkRing(b *testing.B) {
	r, err := NewRing(16000)
	if err != nil {
		b.Fatal(err)
	}
	chunk, frame := benchAudio(5)[:112], make([]int16, 320)
	b.ReportAllocs()
	for b.Loop() {
		for !r.ReadFull(frame) {
			r.Write(chunk)
		}
	}
	sinkSamples = frame
	perSample(b, len(frame))
}
