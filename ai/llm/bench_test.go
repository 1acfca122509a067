package llm_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/voiced/voiced/ai/llm"
)

// BenchmarkFirstToken measures the client's own share of the time to first
// token: a local server that answers at once with a recorded stream (text,
// or tool calls). ttft-ns/op is the time from Stream to the first chunk;
// ns/op adds draining the rest of the stream, so the connection is reused as
// in a call.
func BenchmarkFirstToken(b *testing.B) {
	for _, file := range []string{"openai_text.sse", "openai_tools.sse"} {
		body, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			b.Fatal(err)
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write(body)
		}))
		c, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.URL + "/v1", APIKey: "sk-test"})
		if err != nil {
			b.Fatal(err)
		}
		req := llm.Request{Messages: []llm.Message{{Role: llm.RoleSystem, Content: "Be brief."}, {Role: llm.RoleUser, Content: "Hi"}},
			Tools: []llm.Tool{{Name: "end_call", Description: "Hang up."}}}
		b.Run(file[:len(file)-4], func(b *testing.B) {
			b.ReportAllocs()
			var first time.Duration
			for b.Loop() {
				start := time.Now()
				s, err := c.Stream(context.Background(), req)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.Recv(); err != nil {
					b.Fatal(err)
				}
				first += time.Since(start)
				for {
					if _, err := s.Recv(); errors.Is(err, io.EOF) {
						break
					} else if err != nil {
						b.Fatal(err)
					}
				}
				_ = s.Close()
			}
			b.ReportMetric(float64(first.Nanoseconds())/float64(b.N), "ttft-ns/op")
		})
		srv.Close()
	}
}
