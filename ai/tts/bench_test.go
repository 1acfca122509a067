package tts_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/voiced/voiced/ai/tts"
)

// BenchmarkFirstByte measures the client's share of the time to the first
// audio: a local server that answers at once with 200 ms of 24 kHz PCM.
// first-ns/op is the time from Synthesize to the first samples read; ns/op
// adds reading the rest, so the connection is reused as in a call.
func BenchmarkFirstByte(b *testing.B) {
	pcm := le(tone24k(4800))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "audio/pcm")
		_, _ = w.Write(pcm)
	}))
	defer srv.Close()
	c, err := tts.NewOpenAI(tts.OpenAIConfig{BaseURL: srv.URL + "/v1", APIKey: "sk-test"})
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]int16, 480)
	b.ReportAllocs()
	var first time.Duration
	for b.Loop() {
		start := time.Now()
		a, err := c.Synthesize(context.Background(), tts.Request{Text: "Hello there.", SampleRate: 24000})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := a.Read(buf); err != nil {
			b.Fatal(err)
		}
		first += time.Since(start)
		for {
			if _, err := a.Read(buf); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
		_ = a.Close()
	}
	b.ReportMetric(float64(first.Nanoseconds())/float64(b.N), "first-ns/op")
}
