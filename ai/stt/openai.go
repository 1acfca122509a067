package stt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"

	"github.com/voiced/voiced/ai/internal/oai"
	"github.com/voiced/voiced/codecs/wav"
)

// OpenAIConfig configures an OpenAI-compatible transcription client.
// faster-whisper, whisper.cpp and vLLM servers are reached by their BaseURL.
type OpenAIConfig struct {
	// BaseURL is the API root, up to and including "/v1"; default
	// "https://api.openai.com/v1".
	BaseURL string
	// APIKey is sent as a bearer token when not empty. OPENAI_API_KEY and
	// the other OPENAI_* variables are not read.
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
	// Stream asks for the transcript as server-sent events
	// (stream=true: transcript.text.delta, then transcript.text.done) when
	// a Request has a Partial callback. Default: on for the models OpenAI
	// streams, the gpt-4o transcription models (whisper-1 ignores the
	// option and answers JSON). Set StreamSet to choose explicitly.
	Stream    bool
	StreamSet bool
	// HTTPClient sends the requests; default a client on
	// http.DefaultTransport.
	HTTPClient *http.Client
	// Timeout bounds one transcription, upload to answer; default 30 s.
	Timeout time.Duration
}

// OpenAI is a client of the OpenAI transcription protocol, through
// openai-go. It is safe for concurrent use.
type OpenAI struct {
	cfg            OpenAIConfig
	transcriptions openai.AudioTranscriptionService
}

// A transcription that failed with a connection error, 408, 409, 429 or a
// 5xx is sent once more after a short backoff, within Timeout, unless the
// server asks for a longer wait: losing what the caller said costs more
// than a few hundred milliseconds (docs/decisions.md).
const (
	maxRetries    = 1
	maxRetryDelay = time.Second
)

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
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	if !cfg.StreamSet {
		cfg.Stream = streams(cfg.Model)
	}
	opts, err := oai.Options(oai.Config{Service: "stt", BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, HTTPClient: cfg.HTTPClient,
		MaxRetries: maxRetries, MaxRetryDelay: maxRetryDelay})
	if err != nil {
		return nil, err
	}
	if cfg.ResponseFormat != "json" && cfg.ResponseFormat != "verbose_json" {
		return nil, fmt.Errorf("stt: response format %q: want json or verbose_json", cfg.ResponseFormat)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("stt: negative timeout %v", cfg.Timeout)
	}
	return &OpenAI{cfg: cfg, transcriptions: openai.NewAudioTranscriptionService(opts...)}, nil
}

// Transcribe uploads r.PCM as a 16 kHz WAV file and returns the server's
// text. The language is sent as its ISO 639-1 code ("en" for "en-US"), as
// the protocol asks. An HTTP error status returns an *APIError with the
// server's message.
func (c *OpenAI) Transcribe(ctx context.Context, r Request) (Result, error) {
	if len(r.PCM) == 0 {
		return Result{}, ErrNoAudio
	}
	audio, err := wav.Encode(wav.Format{Encoding: wav.PCM16, SampleRate: SampleRate, Channels: 1}, r.PCM)
	if err != nil {
		return Result{}, fmt.Errorf("stt: encode WAV: %w", err)
	}
	params := openai.AudioTranscriptionNewParams{
		File:           openai.File(bytes.NewReader(audio), "audio.wav", "audio/wav"),
		Model:          c.cfg.Model,
		ResponseFormat: openai.AudioResponseFormat(c.cfg.ResponseFormat),
	}
	if lang := isoLanguage(r.Language); lang != "" {
		params.Language = param.NewOpt(lang)
	}
	if r.Prompt != "" {
		params.Prompt = param.NewOpt(r.Prompt)
	}
	if c.cfg.Logprobs {
		params.Include = []openai.TranscriptionInclude{openai.TranscriptionIncludeLogprobs}
	}
	ctx, cancel := context.WithTimeoutCause(ctx, c.cfg.Timeout, ErrTimeout)
	defer cancel()
	if c.cfg.Stream && r.Partial != nil {
		return c.stream(ctx, params, r.Partial)
	}
	// The body is parsed here (parseTranscription), not into openai-go's
	// response union: one small decoder for both formats' confidence, and a
	// body without "text" is ErrMalformed rather than an empty Result.
	var res *http.Response
	var body []byte
	_, err = c.transcriptions.New(ctx, params, option.WithResponseInto(&res), option.WithResponseBodyInto(&body))
	if err != nil {
		return Result{}, c.postError(ctx, res, err, "")
	}
	return parseTranscription(body)
}

// postError explains a failed POST to /audio/transcriptions: the
// timeout or cancellation that cut it, the provider's HTTP error, or the
// transport's error (how, e.g. " (stream)", says which request).
func (c *OpenAI) postError(ctx context.Context, res *http.Response, err error, how string) error {
	endpoint := c.cfg.BaseURL + "/audio/transcriptions"
	if cause := context.Cause(ctx); cause != nil {
		if errors.Is(cause, ErrTimeout) {
			return fmt.Errorf("stt: POST %s: %w after %v", endpoint, ErrTimeout, c.cfg.Timeout)
		}
		return fmt.Errorf("stt: POST %s: %w", endpoint, cause)
	}
	if ae := oai.HTTPError("stt", res, err); ae != nil {
		return ae
	}
	return fmt.Errorf("stt: POST %s%s: %w", endpoint, how, err)
}

// streams says whether OpenAI streams model's transcripts
// (gpt-4o-transcribe, gpt-4o-mini-transcribe and their dated versions).
func streams(model string) bool {
	return strings.HasPrefix(model, "gpt-4o") && strings.Contains(model, "transcribe")
}

// stream posts params with stream=true and hands each
// transcript.text.delta to partial; transcript.text.done carries the
// transcript (and, with logprobs, the confidence).
func (c *OpenAI) stream(ctx context.Context, params openai.AudioTranscriptionNewParams, partial func(string)) (Result, error) {
	var res *http.Response
	st := c.transcriptions.NewStreaming(ctx, params, option.WithResponseInto(&res))
	defer st.Close()
	var out *Result
	for st.Next() {
		ev := st.Current()
		switch ev.Type {
		case "transcript.text.delta":
			if ev.Delta != "" {
				partial(ev.Delta)
			}
		case "transcript.text.done":
			done := ev.AsTranscriptTextDone()
			r := Result{Text: strings.TrimSpace(done.Text)}
			if lp := done.Logprobs; len(lp) > 0 {
				var sum float64
				for _, l := range lp {
					sum += l.Logprob
				}
				r.Confidence = probability(sum / float64(len(lp)))
			}
			out = &r
		}
	}
	if err := st.Err(); err != nil {
		return Result{}, c.postError(ctx, res, err, " (stream)")
	}
	if out == nil {
		return Result{}, fmt.Errorf("%w: the stream ended without transcript.text.done", ErrMalformed)
	}
	return *out, nil
}

// probability is the confidence of a mean log-probability (never above 1).
func probability(meanLogprob float64) float32 {
	return float32(math.Exp(min(0, meanLogprob)))
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
		res.Confidence = probability(sum / weight)
	case len(tr.Logprobs) > 0:
		var sum float64
		for _, l := range tr.Logprobs {
			sum += l.Logprob
		}
		res.Confidence = probability(sum / float64(len(tr.Logprobs)))
	}
	return res, nil
}
