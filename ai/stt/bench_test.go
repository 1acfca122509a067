package stt_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/voiced/voiced/ai/stt"
)

// BenchmarkTranscribe measures the client's share of one transcription: a
// one second segment uploaded to a local server that answers at once.
func BenchmarkTranscribe(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"text":" Hello there."}`)
	}))
	defer srv.Close()
	c, err := stt.NewOpenAI(stt.OpenAIConfig{BaseURL: srv.URL + "/v1", APIKey: "sk-test"})
	if err != nil {
		b.Fatal(err)
	}
	req := stt.Request{PCM: segment(16000), Language: "en-US"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Transcribe(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}
