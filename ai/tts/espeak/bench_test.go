package espeak_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/voiced/voiced/ai/tts"
	"github.com/voiced/voiced/ai/tts/espeak"
)

// benchText is a typical agent answer: two sentences, about 7 s of speech.
const benchText = "Thanks for calling. Your appointment is confirmed for Thursday at three thirty in the afternoon, and we will send you a reminder the day before."

// BenchmarkTTSEspeak synthesizes benchText per op at 16 kHz (the analysis
// rate) and 24 kHz (the WebSocket rate), reading it in 20 ms frames as the
// engine does. It reports the real-time factor (synthesis and conversion
// time over audio duration: 0.01 is 100 times faster than real time), the
// time to the first audio frame, and audio seconds per op.
func BenchmarkTTSEspeak(b *testing.B) {
	for _, rate := range []int{16000, 24000} {
		b.Run(map[int]string{16000: "16k", 24000: "24k"}[rate], func(b *testing.B) {
			s, err := espeak.New(espeak.Config{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			req := tts.Request{Text: benchText, SampleRate: rate}
			buf := make([]int16, rate/50)
			var samples int
			var first, total time.Duration
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				a, err := s.Synthesize(context.Background(), req)
				if err != nil {
					b.Fatal(err)
				}
				for n := 0; ; n++ {
					k, err := a.Read(buf)
					if n == 0 {
						first += time.Since(start)
					}
					samples += k
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				_ = a.Close()
				total += time.Since(start)
			}
			audio := time.Duration(samples) * time.Second / time.Duration(rate)
			b.ReportMetric(total.Seconds()/audio.Seconds(), "rtf")
			b.ReportMetric(float64(first.Microseconds())/1000/float64(b.N), "first-audio-ms")
			b.ReportMetric(audio.Seconds()/float64(b.N), "audio-s/op")
		})
	}
}
