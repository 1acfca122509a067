package wav

import (
	"fmt"
	"testing"
)

var benchFormats = []Format{{PCM16, 16000, 1}, {ULaw, 8000, 1}, {PCM16, 48000, 2}}

// BenchmarkWAVWriteSamples measures writing one 20 ms frame.
func BenchmarkWAVWriteSamples(b *testing.B) {
	for _, f := range benchFormats {
		b.Run(fmt.Sprintf("%s_%d_%dch", f.Encoding, f.SampleRate, f.Channels), func(b *testing.B) {
			frame := tone(f.SampleRate, f.Channels, f.SampleRate/50)
			out := &seekBuffer{b: make([]byte, 0, 1<<21)}
			w, err := NewWriter(out, f)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetBytes(int64(2 * len(frame)))
			for b.Loop() {
				if out.pos > 1<<20 {
					// Keep the sink small: start the file again. The
					// writer's state is three integers, so this is what a
					// fresh writer would do.
					out.pos = f.headerLen()
					w.dataLen = 0
				}
				if err := w.WriteSamples(frame); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// cycleReader serves a header once, then the same data forever, so a
// reader with an open-ended data chunk can be benchmarked in steady state.
type cycleReader struct {
	header, data []byte
	pos          int
}

func (c *cycleReader) Read(p []byte) (int, error) {
	if len(c.header) > 0 {
		n := copy(p, c.header)
		c.header = c.header[n:]
		return n, nil
	}
	n := copy(p, c.data[c.pos:])
	c.pos = (c.pos + n) % len(c.data)
	return n, nil
}

// BenchmarkWAVReadSamples measures reading one 20 ms frame.
func BenchmarkWAVReadSamples(b *testing.B) {
	for _, f := range benchFormats {
		b.Run(fmt.Sprintf("%s_%d_%dch", f.Encoding, f.SampleRate, f.Channels), func(b *testing.B) {
			frame := tone(f.SampleRate, f.Channels, f.SampleRate/50)
			file, err := Encode(f, tone(f.SampleRate, f.Channels, f.SampleRate)) // 1 s
			if err != nil {
				b.Fatal(err)
			}
			h := f.headerLen()
			header := append([]byte(nil), file[:h]...)
			copy(header[4:8], le32(0xFFFFFFFF))
			copy(header[h-4:], le32(0xFFFFFFFF))
			r, err := NewReader(&cycleReader{header: header, data: file[h:]})
			if err != nil {
				b.Fatal(err)
			}
			dst := make([]int16, len(frame))
			b.ReportAllocs()
			b.SetBytes(int64(2 * len(frame)))
			for b.Loop() {
				if _, err := r.ReadSamples(dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
