package stt_test

import (
	"context"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/stt"
	"github.com/voiced/voiced/codecs/wav"
)

// upload is what the fake server received.
type upload struct {
	fields   map[string][]string
	filename string
	ctype    string
	format   wav.Format
	pcm      []int16
	auth     string
}

// transcriptionServer parses the multipart upload the way a real server
// does, decodes its WAV file, and answers status and body.
func transcriptionServer(t *testing.T, status int, body string, got *upload) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/audio/transcriptions" {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		if err := r.ParseMultipartForm(8 << 20); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f, hdr, err := r.FormFile("file")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		format, pcm, err := wav.ReadAll(f)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if got != nil {
			*got = upload{fields: r.MultipartForm.Value, filename: hdr.Filename, ctype: hdr.Header.Get("Content-Type"),
				format: format, pcm: pcm, auth: r.Header.Get("Authorization")}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func segment(n int) []int16 {
	rng := rand.New(rand.NewPCG(1, 2))
	s := make([]int16, n)
	for i := range s {
		s[i] = int16(3000*math.Sin(float64(i)/7) + 200*rng.NormFloat64())
	}
	return s
}

func TestOpenAITranscribe(t *testing.T) {
	pcm := segment(16000 * 3 / 2)
	var got upload
	srv := transcriptionServer(t, 200, `{"text":" Hello there, I'd like to book a table.","usage":{"type":"duration","seconds":2}}`, &got)
	c, err := stt.NewOpenAI(stt.OpenAIConfig{BaseURL: srv.URL + "/v1", APIKey: "sk-test"})
	require.NoError(t, err)
	res, err := c.Transcribe(context.Background(), stt.Request{PCM: pcm, Language: "en-US", Prompt: "Booking at Chez Marie."})
	require.NoError(t, err)
	require.Equal(t, stt.Result{Text: "Hello there, I'd like to book a table."}, res)
	require.Equal(t, wav.Format{Encoding: wav.PCM16, SampleRate: 16000, Channels: 1}, got.format)
	require.Equal(t, pcm, got.pcm, "the segment arrives intact")
	require.Equal(t, "audio.wav", got.filename)
	require.Equal(t, "audio/wav", got.ctype)
	require.Equal(t, "Bearer sk-test", got.auth)
	require.Equal(t, map[string][]string{
		"model": {"whisper-1"}, "response_format": {"json"}, "language": {"en"}, "prompt": {"Booking at Chez Marie."},
	}, got.fields)
}

func TestOpenAIConfidence(t *testing.T) {
	pcm := segment(8000)
	t.Run("verbose_json", func(t *testing.T) {
		var got upload
		srv := transcriptionServer(t, 200, `{"task":"transcribe","language":"english","duration":2.5,"text":"Yes, please.","segments":[`+
			`{"id":0,"seek":0,"start":0.0,"end":1.0,"text":" Yes,","tokens":[50364,1079,11],"temperature":0.0,"avg_logprob":-0.1,"compression_ratio":0.6,"no_speech_prob":0.01},`+
			`{"id":1,"seek":0,"start":1.0,"end":2.5,"text":" please.","tokens":[1767,13,50489],"temperature":0.0,"avg_logprob":-0.4,"compression_ratio":0.6,"no_speech_prob":0.01}]}`, &got)
		c, err := stt.NewOpenAI(stt.OpenAIConfig{BaseURL: srv.URL + "/v1", ResponseFormat: "verbose_json", Model: "Systran/faster-whisper-small"})
		require.NoError(t, err)
		res, err := c.Transcribe(context.Background(), stt.Request{PCM: pcm})
		require.NoError(t, err)
		require.Equal(t, "Yes, please.", res.Text)
		require.InDelta(t, math.Exp((-0.1*1+-0.4*1.5)/2.5), res.Confidence, 1e-6)
		require.Equal(t, []string{"verbose_json"}, got.fields["response_format"])
		require.Equal(t, []string{"Systran/faster-whisper-small"}, got.fields["model"])
		require.NotContains(t, got.fields, "language")
		require.Empty(t, got.auth)
	})
	t.Run("logprobs", func(t *testing.T) {
		var got upload
		srv := transcriptionServer(t, 200, `{"text":"Yes.","logprobs":[{"token":"Yes","logprob":-0.02,"bytes":[89,101,115]},{"token":".","logprob":-0.3,"bytes":[46]}],"usage":{"type":"tokens","input_tokens":14,"output_tokens":2,"total_tokens":16}}`, &got)
		c, err := stt.NewOpenAI(stt.OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "gpt-4o-transcribe", Logprobs: true})
		require.NoError(t, err)
		res, err := c.Transcribe(context.Background(), stt.Request{PCM: pcm, Language: "fr_CA"})
		require.NoError(t, err)
		require.InDelta(t, math.Exp(-0.16), res.Confidence, 1e-6)
		require.Equal(t, []string{"logprobs"}, got.fields["include[]"])
		require.Equal(t, []string{"fr"}, got.fields["language"])
	})
}

func TestOpenAITranscribeErrors(t *testing.T) {
	pcm := segment(1600)
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   error
		msg    string
	}{
		{"bad key", 401, `{"error":{"message":"Incorrect API key provided: sk-test.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, stt.ErrUnauthorized, "Incorrect API key"},
		{"too short", 400, `{"error":{"message":"Audio file is too short. Minimum audio length is 0.1 seconds.","type":"invalid_request_error","param":"file","code":"audio_too_short"}}`, stt.ErrBadRequest, "too short"},
		{"fastapi", 422, `{"detail":"Model 'large-v9' is not supported"}`, stt.ErrBadRequest, "large-v9"},
		{"quota", 429, `{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","code":"insufficient_quota"}}`, stt.ErrRateLimited, "quota"},
		{"crash", 500, `Internal Server Error`, stt.ErrServer, "Internal Server Error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := transcriptionServer(t, tc.status, tc.body, nil)
			c, err := stt.NewOpenAI(stt.OpenAIConfig{BaseURL: srv.URL + "/v1"})
			require.NoError(t, err)
			_, err = c.Transcribe(context.Background(), stt.Request{PCM: pcm})
			require.ErrorIs(t, err, tc.want)
			var ae *stt.APIError
			require.ErrorAs(t, err, &ae)
			require.Equal(t, tc.status, ae.StatusCode)
			require.Contains(t, ae.Message, tc.msg)
		})
	}
	t.Run("not json", func(t *testing.T) {
		srv := transcriptionServer(t, 200, "Hello there.", nil)
		c, err := stt.NewOpenAI(stt.OpenAIConfig{BaseURL: srv.URL + "/v1"})
		require.NoError(t, err)
		_, err = c.Transcribe(context.Background(), stt.Request{PCM: pcm})
		require.ErrorIs(t, err, stt.ErrMalformed)
	})
	t.Run("no audio", func(t *testing.T) {
		c, err := stt.NewOpenAI(stt.OpenAIConfig{})
		require.NoError(t, err)
		_, err = c.Transcribe(context.Background(), stt.Request{})
		require.ErrorIs(t, err, stt.ErrNoAudio)
	})
	t.Run("config", func(t *testing.T) {
		_, err := stt.NewOpenAI(stt.OpenAIConfig{BaseURL: "ftp://x"})
		require.Error(t, err)
		_, err = stt.NewOpenAI(stt.OpenAIConfig{ResponseFormat: "srt"})
		require.Error(t, err)
	})
}

func TestOpenAITranscribeCancellation(t *testing.T) {
	gone := make(chan struct{}, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
		gone <- struct{}{}
	}))
	defer srv.Close()
	pcm := segment(1600)

	c, err := stt.NewOpenAI(stt.OpenAIConfig{BaseURL: srv.URL})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel)
	_, err = c.Transcribe(ctx, stt.Request{PCM: pcm})
	require.ErrorIs(t, err, context.Canceled)
	<-gone

	c, err = stt.NewOpenAI(stt.OpenAIConfig{BaseURL: srv.URL, Timeout: 50 * time.Millisecond})
	require.NoError(t, err)
	_, err = c.Transcribe(context.Background(), stt.Request{PCM: pcm})
	require.ErrorIs(t, err, stt.ErrTimeout)
	<-gone
}

// sseServer is a scripted streaming transcription server: it checks the
// upload asks for stream=true and writes events one by one, each after
// next says so (nil: at once).
func sseServer(t *testing.T, events []string, next <-chan struct{}, got *upload) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseMultipartForm(8 << 20); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if got != nil {
			*got = upload{fields: r.MultipartForm.Value}
		}
		if r.FormValue("stream") != "true" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"text":"not streamed"}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i, e := range events {
			if i > 0 && next != nil {
				select {
				case <-next:
				case <-time.After(5 * time.Second):
					t.Errorf("the client did not see event %d before the next was sent", i-1)
					return
				}
			}
			_, _ = io.WriteString(w, "data: "+e+"\n\n")
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestOpenAITranscribeStreams(t *testing.T) {
	events := []string{
		`{"type":"transcript.text.delta","delta":"I'd like"}`,
		`{"type":"transcript.text.delta","delta":" to book"}`,
		`{"type":"transcript.text.delta","delta":" a table."}`,
		`{"type":"transcript.text.done","text":"I'd like to book a table.","logprobs":[{"token":"I","logprob":-0.1},{"token":"'d","logprob":-0.3}]}`,
	}
	next := make(chan struct{})
	var got upload
	srv := sseServer(t, events, next, &got)
	c, err := stt.NewOpenAI(stt.OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "gpt-4o-mini-transcribe"})
	require.NoError(t, err)
	var deltas []string
	res, err := c.Transcribe(context.Background(), stt.Request{PCM: segment(16000), Partial: func(d string) {
		deltas = append(deltas, d)
		// The server sends the next event only now: each delta arrived
		// while the answer was still being written.
		next <- struct{}{}
	}})
	require.NoError(t, err)
	require.Equal(t, []string{"I'd like", " to book", " a table."}, deltas)
	require.Equal(t, "I'd like to book a table.", res.Text)
	require.InDelta(t, math.Exp(-0.2), res.Confidence, 1e-6)
	require.Equal(t, []string{"true"}, got.fields["stream"])

	// Without a Partial callback the request is the plain JSON one.
	srv = sseServer(t, events, nil, nil)
	c, err = stt.NewOpenAI(stt.OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "gpt-4o-transcribe"})
	require.NoError(t, err)
	res, err = c.Transcribe(context.Background(), stt.Request{PCM: segment(16000)})
	require.NoError(t, err)
	require.Equal(t, "not streamed", res.Text)

	// whisper-1 is not streamed by default (OpenAI ignores stream for it).
	c, err = stt.NewOpenAI(stt.OpenAIConfig{BaseURL: srv.URL + "/v1"})
	require.NoError(t, err)
	called := false
	res, err = c.Transcribe(context.Background(), stt.Request{PCM: segment(16000), Partial: func(string) { called = true }})
	require.NoError(t, err)
	require.Equal(t, "not streamed", res.Text)
	require.False(t, called)

	// ... unless asked.
	c, err = stt.NewOpenAI(stt.OpenAIConfig{BaseURL: srv.URL + "/v1", Stream: true, StreamSet: true})
	require.NoError(t, err)
	var n int
	res, err = c.Transcribe(context.Background(), stt.Request{PCM: segment(16000), Partial: func(string) { n++ }})
	require.NoError(t, err)
	require.Equal(t, "I'd like to book a table.", res.Text)
	require.Equal(t, 3, n)
}

func TestOpenAITranscribeStreamErrors(t *testing.T) {
	// A stream cut before transcript.text.done is malformed, not an
	// empty transcript.
	srv := sseServer(t, []string{`{"type":"transcript.text.delta","delta":"I'd"}`}, nil, nil)
	c, err := stt.NewOpenAI(stt.OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "gpt-4o-transcribe"})
	require.NoError(t, err)
	_, err = c.Transcribe(context.Background(), stt.Request{PCM: segment(16000), Partial: func(string) {}})
	require.ErrorIs(t, err, stt.ErrMalformed)

	// An HTTP error status is an *APIError with the server's message.
	srv = transcriptionServer(t, 400, `{"error":{"message":"stream is not supported","type":"invalid_request_error"}}`, nil)
	c, err = stt.NewOpenAI(stt.OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "gpt-4o-transcribe"})
	require.NoError(t, err)
	_, err = c.Transcribe(context.Background(), stt.Request{PCM: segment(16000), Partial: func(string) {}})
	var ae *stt.APIError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, 400, ae.StatusCode)
	require.Contains(t, ae.Error(), "stream is not supported")
}
