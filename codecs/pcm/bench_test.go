package pcm

import (
	"encoding/binary"
	"testing"
)

// benchSamples is one 20 ms frame at 16 kHz, the analysis rate.
const benchSamples = 320

func benchFrame() []int16 {
	s := make([]int16, benchSamples)
	for i := range s {
		s[i] = int16(i*409 - 65000)
	}
	return s
}

// Sinks keep the destination buffers escaping, so the compiler cannot drop
// the conversions as stores nobody reads.
var (
	sinkInt16   []int16
	sinkBytes   []byte
	sinkFloat32 []float32
)

func perSample(b *testing.B) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchSamples, "ns/sample")
}

func BenchmarkPCMBytesToInt16(b *testing.B) {
	src := make([]byte, 2*benchSamples)
	Int16ToBytesTo(src, benchFrame())
	dst := make([]int16, benchSamples)
	b.ReportAllocs()
	b.SetBytes(2 * benchSamples)
	for b.Loop() {
		_, _ = BytesToInt16To(dst, src)
	}
	sinkInt16 = dst
	perSample(b)
}

// BenchmarkPCMBytesToInt16Loop is the portable per-sample loop that big-endian
// machines use, for comparison with the copy on little-endian ones.
func BenchmarkPCMBytesToInt16Loop(b *testing.B) {
	src := make([]byte, 2*benchSamples)
	Int16ToBytesTo(src, benchFrame())
	dst := make([]int16, benchSamples)
	b.ReportAllocs()
	b.SetBytes(2 * benchSamples)
	for b.Loop() {
		for i := range dst {
			dst[i] = int16(binary.LittleEndian.Uint16(src[2*i:]))
		}
	}
	sinkInt16 = dst
	perSample(b)
}

func BenchmarkPCMInt16ToBytes(b *testing.B) {
	src := benchFrame()
	dst := make([]byte, 2*benchSamples)
	b.ReportAllocs()
	b.SetBytes(2 * benchSamples)
	for b.Loop() {
		Int16ToBytesTo(dst, src)
	}
	sinkBytes = dst
	perSample(b)
}

func BenchmarkPCMInt16ToFloat32(b *testing.B) {
	src := benchFrame()
	dst := make([]float32, benchSamples)
	b.ReportAllocs()
	b.SetBytes(2 * benchSamples)
	for b.Loop() {
		Int16ToFloat32To(dst, src)
	}
	sinkFloat32 = dst
	perSample(b)
}

func BenchmarkPCMFloat32ToInt16(b *testing.B) {
	src := make([]float32, benchSamples)
	Int16ToFloat32To(src, benchFrame())
	dst := make([]int16, benchSamples)
	b.ReportAllocs()
	b.SetBytes(4 * benchSamples)
	for b.Loop() {
		Float32ToInt16To(dst, src)
	}
	sinkInt16 = dst
	perSample(b)
}
