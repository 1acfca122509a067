package tts_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/tts"
)

// tone24k returns n samples of a 440 Hz tone at 24 kHz, -6 dBFS.
func tone24k(n int) []int16 {
	s := make([]int16, n)
	for i := range s {
		s[i] = int16(math.Round(16384 * math.Sin(2*math.Pi*440*float64(i)/24000)))
	}
	return s
}

func le(s []int16) []byte {
	b := make([]byte, 2*len(s))
	for i, v := range s {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
	}
	return b
}

// speechServer answers POST /v1/audio/speech with pcm, written in pieces of
// odd byte lengths (so samples straddle reads) with a flush after each, and
// records the request.
func speechServer(t *testing.T, pcm []byte, got *map[string]any) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/audio/speech" {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		req := map[string]any{}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req["authorization"] = r.Header.Get("Authorization")
		if got != nil {
			*got = req
		}
		w.Header().Set("Content-Type", "audio/pcm")
		for b := pcm; len(b) > 0; {
			n := min(len(b), 999)
			_, _ = w.Write(b[:n])
			w.(http.Flusher).Flush()
			b = b[n:]
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func newOpenAI(t *testing.T, base string) *tts.OpenAI {
	t.Helper()
	c, err := tts.NewOpenAI(tts.OpenAIConfig{BaseURL: base + "/v1", APIKey: "sk-test"})
	require.NoError(t, err)
	return c
}

// readAll reads a to io.EOF in 20 ms frames.
func readAll(t *testing.T, a tts.Audio, rate int) []int16 {
	t.Helper()
	var out []int16
	buf := make([]int16, rate/50)
	for {
		n, err := a.Read(buf)
		out = append(out, buf[:n]...)
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
	}
}

// amplitudeAt is the amplitude of frequency f in x (rate fs), by a
// single-bin DFT over whole periods after the first 10 ms.
func amplitudeAt(x []int16, f float64, fs int) float64 {
	x = x[fs/100:]
	n := int(float64(len(x)) / (float64(fs) / f) * (float64(fs) / f))
	var re, im float64
	for i, v := range x[:n] {
		s, c := math.Sincos(2 * math.Pi * f * float64(i) / float64(fs))
		re += float64(v) * c
		im += float64(v) * s
	}
	return 2 * math.Hypot(re, im) / float64(n)
}

func TestOpenAISpeech(t *testing.T) {
	src := tone24k(24000) // one second
	for _, rate := range []int{24000, 16000, 8000, 48000} {
		t.Run(map[int]string{24000: "24k", 16000: "16k", 8000: "8k", 48000: "48k"}[rate], func(t *testing.T) {
			var got map[string]any
			srv := speechServer(t, le(src), &got)
			a, err := newOpenAI(t, srv.URL).Synthesize(context.Background(), tts.Request{Text: "Hello there.", SampleRate: rate, Speed: 1.25})
			require.NoError(t, err)
			defer a.Close()
			out := readAll(t, a, rate)
			require.Len(t, out, rate, "one second at the requested rate, aligned")
			if rate == 24000 {
				require.Equal(t, src, out, "no conversion at the native rate")
			}
			require.InDelta(t, 16384, amplitudeAt(out, 440, rate), 30, "the tone survives the conversion")
			require.Equal(t, map[string]any{
				"model": "tts-1", "input": "Hello there.", "voice": "alloy", "response_format": "pcm", "speed": 1.25,
				"authorization": "Bearer sk-test",
			}, got)
		})
	}
	t.Run("voice and speed", func(t *testing.T) {
		var got map[string]any
		srv := speechServer(t, le(src[:240]), &got)
		c, err := tts.NewOpenAI(tts.OpenAIConfig{BaseURL: srv.URL + "/v1/", Model: "gpt-4o-mini-tts", Voice: "nova"})
		require.NoError(t, err)
		for _, tc := range []struct {
			voice, want string
			speed       float64
			wantSpeed   any
		}{{"", "nova", 0, nil}, {"openai:echo", "echo", 9, 4.0}, {"shimmer", "shimmer", 0.1, 0.25}} {
			a, err := c.Synthesize(context.Background(), tts.Request{Text: "x", Voice: tc.voice, SampleRate: 24000, Speed: tc.speed})
			require.NoError(t, err)
			readAll(t, a, 24000)
			require.NoError(t, a.Close())
			require.Equal(t, tc.want, got["voice"])
			require.Equal(t, "gpt-4o-mini-tts", got["model"])
			require.Equal(t, tc.wantSpeed, got["speed"])
			require.NotContains(t, got["authorization"], "Bearer")
		}
	})
}

func TestOpenAISpeechErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   error
		msg    string
	}{
		{"bad key", 401, `{"error":{"message":"Incorrect API key provided: sk-test.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, tts.ErrUnauthorized, "Incorrect API key"},
		{"bad voice", 400, `{"error":{"message":"Invalid value: 'bob'. Supported values are: 'alloy', 'ash', 'coral'.","type":"invalid_request_error","param":"voice","code":"invalid_value"}}`, tts.ErrBadRequest, "Supported values"},
		{"fastapi", 422, `{"detail":"Voice 'bob' not found"}`, tts.ErrBadRequest, "Voice 'bob' not found"},
		{"busy", 429, `{"error":{"message":"Rate limit reached for tts-1","type":"requests","code":"rate_limit_exceeded"}}`, tts.ErrRateLimited, "Rate limit reached"},
		{"down", 503, "upstream connect error\n", tts.ErrServer, "upstream connect error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			_, err := newOpenAI(t, srv.URL).Synthesize(context.Background(), tts.Request{Text: "x", SampleRate: 16000})
			require.ErrorIs(t, err, tc.want)
			var ae *tts.APIError
			require.ErrorAs(t, err, &ae)
			require.Equal(t, tc.status, ae.StatusCode)
			require.Contains(t, ae.Message, tc.msg)
		})
	}
	c := newOpenAI(t, "http://127.0.0.1:1")
	_, err := c.Synthesize(context.Background(), tts.Request{Text: "x", SampleRate: 22050})
	require.ErrorIs(t, err, tts.ErrUnsupportedRate)
	_, err = c.Synthesize(context.Background(), tts.Request{Text: " ", SampleRate: 16000})
	require.ErrorIs(t, err, tts.ErrBadRequest)
	_, err = c.Synthesize(context.Background(), tts.Request{Text: "x", SampleRate: 16000, Speed: -1})
	require.ErrorIs(t, err, tts.ErrBadRequest)
	_, err = tts.NewOpenAI(tts.OpenAIConfig{BaseURL: "api.openai.com"})
	require.Error(t, err)
}

// heldSpeech sends 100 ms of audio, then holds the response open until the
// client leaves (reported on gone) or release is closed.
func heldSpeech(t *testing.T, release chan struct{}) (*httptest.Server, chan struct{}) {
	gone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = w.Write(le(tone24k(2400)))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			close(gone)
		case <-release:
			_, _ = w.Write(le(tone24k(2400)))
		}
	}))
	t.Cleanup(srv.Close)
	return srv, gone
}

func TestOpenAISpeechStreamsAndStops(t *testing.T) {
	t.Run("streams", func(t *testing.T) {
		release := make(chan struct{})
		srv, _ := heldSpeech(t, release)
		a, err := newOpenAI(t, srv.URL).Synthesize(context.Background(), tts.Request{Text: "x", SampleRate: 16000})
		require.NoError(t, err)
		defer a.Close()
		buf := make([]int16, 320)
		n, err := a.Read(buf) // while the server still holds the rest
		require.NoError(t, err)
		require.Positive(t, n)
		close(release)
		rest := readAll(t, a, 16000)
		require.Len(t, rest, 3200-n)
	})
	t.Run("close", func(t *testing.T) {
		srv, gone := heldSpeech(t, nil)
		a, err := newOpenAI(t, srv.URL).Synthesize(context.Background(), tts.Request{Text: "x", SampleRate: 16000})
		require.NoError(t, err)
		buf := make([]int16, 4000)
		_, err = a.Read(buf)
		require.NoError(t, err)
		time.AfterFunc(20*time.Millisecond, func() { _ = a.Close() })
		for err == nil {
			_, err = a.Read(buf)
		}
		require.ErrorIs(t, err, tts.ErrClosed)
		require.NoError(t, a.Close())
		select {
		case <-gone:
		case <-time.After(5 * time.Second):
			t.Fatal("the server never saw the connection close")
		}
	})
	t.Run("context", func(t *testing.T) {
		srv, gone := heldSpeech(t, nil)
		ctx, cancel := context.WithCancel(context.Background())
		a, err := newOpenAI(t, srv.URL).Synthesize(ctx, tts.Request{Text: "x", SampleRate: 24000})
		require.NoError(t, err)
		defer a.Close()
		buf := make([]int16, 4000)
		_, err = a.Read(buf)
		require.NoError(t, err)
		time.AfterFunc(20*time.Millisecond, cancel)
		for err == nil {
			_, err = a.Read(buf)
		}
		require.ErrorIs(t, err, context.Canceled)
		<-gone
	})
	t.Run("timeout", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
		}))
		defer srv.Close()
		c, err := tts.NewOpenAI(tts.OpenAIConfig{BaseURL: srv.URL, Timeout: 50 * time.Millisecond})
		require.NoError(t, err)
		_, err = c.Synthesize(context.Background(), tts.Request{Text: "x", SampleRate: 16000})
		require.ErrorIs(t, err, tts.ErrTimeout)
	})
}
