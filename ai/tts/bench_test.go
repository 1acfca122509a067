package tts_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/voiced/voiced/ai/tts"
)

// BenchmarkFirstByte measures the client's share of the time to the first
// audio: a local server that answers at once with 200 ms of 24 kHz PCM, the
// time from Synthesize to the first samples read, then the rest read at the
// native rate so the connection is reused.
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
	for b.Loop() {
		a, err := c.Synthesize(context.Background(), tts.Request{Text: "Hello there.", SampleRate: 24000})
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := a.Read(buf); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
		_ = a.Close()
	}
}
