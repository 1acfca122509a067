package mp3

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkMP3Encode encodes one 20 ms frame per op and reports how many
// times faster than real time that is.
func BenchmarkMP3Encode(b *testing.B) {
	for _, cfg := range []Config{
		{SampleRate: 8000, Channels: 1, BitrateKbps: 16},
		{SampleRate: 16000, Channels: 1, BitrateKbps: 32},
		{SampleRate: 44100, Channels: 2, BitrateKbps: 128},
	} {
		b.Run(fmt.Sprintf("%d_%dch_%dkbps", cfg.SampleRate, cfg.Channels, cfg.BitrateKbps), func(b *testing.B) {
			e, err := NewEncoder(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			frame := sine(cfg.SampleRate, cfg.Channels, 440, 0.02)
			buf := make([]byte, 0, 16<<10)
			b.ReportAllocs()
			b.SetBytes(int64(2 * len(frame)))
			for b.Loop() {
				if _, err := e.Encode(buf[:0], frame); err != nil {
					b.Fatal(err)
				}
			}
			perFrame := b.Elapsed() / time.Duration(b.N)
			b.ReportMetric(float64(20*time.Millisecond)/float64(perFrame), "x_realtime")
		})
	}
}
