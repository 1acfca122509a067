package stt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"time"

	"github.com/voiced/voiced/codecs/wav"
)

// OpenAIConfig configures an OpenAI-compatible transcription client.
// faster-whisper, whisper.cpp and vLLM servers are reached by their BaseURL.
type OpenAIConfig struct {
	// BaseURL is the API root, up to and including "/v1"; default
	// "https://api.openai.com/v1".
	BaseURL string
	// APIKey is sent as a bearer token when not empty.
	APIKey string
	// Model is the transcription model; default "whisper-1".
	Model string
	// ResponseFormat is "json" (the default, which every model and server
	// supports) or "verbose_json", whose per-segment log-probabilities
	// (Whisper models) give Result.Confidence.
	ResponseFormat string
	// Logprobs asks for token log-probabilities (include[]=logprobs, the
	// gpt-4o-transcribe models with "json"), which give Result.Confidence.
	Logprobs bool
	// HTTPClient sends the requests; default a client on
	// http.DefaultTransport.
	HTTPClient *http.Client
	// Timeout bounds one transcription, upload to answer; default 30 s.
	Timeout time.Duration
}

// OpenAI is a client of the OpenAI transcription protocol. It is safe for
// concurrent use.
type OpenAI struct {
	cfg      OpenAIConfig
	endpoint string
}

// NewOpenAI returns a client for cfg, with defaults filled in. It fails if
// BaseURL is not an absolute http(s) URL, ResponseFormat is not one of the
// two JSON formats or Timeout is negative.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = "https://api.openai.com/v1"
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.Model == "" {
		cfg.Model = "whisper-1"
	}
	if cfg.ResponseFormat == "" {
		cfg.ResponseFormat = "json"
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("stt: base URL %q: want an absolute http or https URL", cfg.BaseURL)
	}
	if cfg.ResponseFormat != "json" && cfg.ResponseFormat != "verbose_json" {
		return nil, fmt.Errorf("stt: response format %q: want json or verbose_json", cfg.ResponseFormat)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("stt: negative timeout %v", cfg.Timeout)
	}
	return &OpenAI{cfg: cfg, endpoint: cfg.BaseURL + "/audio/transcriptions"}, nil
}

// Transcribe uploads r.PCM as a 16 kHz WAV file and returns the server's
// text. The language is sent as its ISO 639-1 code ("en" for "en-US"), as
// the protocol asks. An HTTP error status returns an *APIError with the
// server's message.
func (c *OpenAI) Transcribe(ctx context.Context, r Request) (Result, error) {
	if len(r.PCM) == 0 {
		return Result{}, ErrNoAudio
	}
	body, contentType, err := c.form(r)
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, c.cfg.Timeout, ErrTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return Result{}, fmt.Errorf("stt: %w", err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json")
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return Result{}, c.requestError(ctx, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return Result{}, c.requestError(ctx, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return Result{}, parseAPIError(resp.StatusCode, b)
	}
	return parseTranscription(b)
}

// requestError reports a failed exchange, by its cause when the context
// ended it.
func (c *OpenAI) requestError(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil {
		if errors.Is(cause, ErrTimeout) {
			return fmt.Errorf("stt: POST %s: %w after %v", c.endpoint, ErrTimeout, c.cfg.Timeout)
		}
		return fmt.Errorf("stt: POST %s: %w", c.endpoint, cause)
	}
	return fmt.Errorf("stt: POST %s: %w", c.endpoint, err)
}

// form builds the multipart body: file, model, response_format and the
// optional language, prompt and include[].
func (c *OpenAI) form(r Request) ([]byte, string, error) {
	audio, err := wav.Encode(wav.Format{Encoding: wav.PCM16, SampleRate: SampleRate, Channels: 1}, r.PCM)
	if err != nil {
		return nil, "", fmt.Errorf("stt: encode WAV: %w", err)
	}
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="file"; filename="audio.wav"`)
	h.Set("Content-Type", "audio/wav")
	part, err := w.CreatePart(h)
	if err != nil {
		return nil, "", fmt.Errorf("stt: %w", err)
	}
	if _, err := part.Write(audio); err != nil {
		return nil, "", fmt.Errorf("stt: %w", err)
	}
	fields := [][2]string{{"model", c.cfg.Model}, {"response_format", c.cfg.ResponseFormat}}
	if lang := isoLanguage(r.Language); lang != "" {
		fields = append(fields, [2]string{"language", lang})
	}
	if r.Prompt != "" {
		fields = append(fields, [2]string{"prompt", r.Prompt})
	}
	if c.cfg.Logprobs {
		fields = append(fields, [2]string{"include[]", "logprobs"})
	}
	for _, f := range fields {
		if err := w.WriteField(f[0], f[1]); err != nil {
			return nil, "", fmt.Errorf("stt: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, "", fmt.Errorf("stt: %w", err)
	}
	return buf.Bytes(), w.FormDataContentType(), nil
}

// isoLanguage returns the primary language subtag of a BCP-47 tag,
// lowercase: "en" for "en-US".
func isoLanguage(tag string) string {
	p, _, _ := strings.Cut(strings.TrimSpace(tag), "-")
	p, _, _ = strings.Cut(p, "_")
	return strings.ToLower(p)
}

// parseTranscription reads {"text": ...} with the optional "segments"
// (verbose_json: avg_logprob per segment) or "logprobs" (include[]=logprobs:
// one logprob per token); the mean log-probability, exponentiated, is the
// confidence.
func parseTranscription(b []byte) (Result, error) {
	var tr struct {
		Text     *string `json:"text"`
		Segments []struct {
			AvgLogprob float64 `json:"avg_logprob"`
			Start      float64 `json:"start"`
			End        float64 `json:"end"`
		} `json:"segments"`
		Logprobs []struct {
			Logprob float64 `json:"logprob"`
		} `json:"logprobs"`
	}
	if err := json.Unmarshal(b, &tr); err != nil || tr.Text == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		if len(line) > 200 {
			line = line[:200]
		}
		return Result{}, fmt.Errorf("%w: want {\"text\": ...}, got %q", ErrMalformed, line)
	}
	res := Result{Text: strings.TrimSpace(*tr.Text)}
	switch {
	case len(tr.Segments) > 0:
		// Weighted by segment duration; equal weights if none is given.
		var sum, weight float64
		for _, s := range tr.Segments {
			w := s.End - s.Start
			if w <= 0 {
				w = 1
			}
			sum += s.AvgLogprob * w
			weight += w
		}
		res.Confidence = float32(math.Exp(min(0, sum/weight)))
	case len(tr.Logprobs) > 0:
		var sum float64
		for _, l := range tr.Logprobs {
			sum += l.Logprob
		}
		res.Confidence = float32(math.Exp(min(0, sum/float64(len(tr.Logprobs)))))
	}
	return res, nil
}
