package tts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/voiced/voiced/codecs/pcm"
	"github.com/voiced/voiced/codecs/resample"
)

// OpenAIConfig configures an OpenAI-compatible speech client. Local servers
// that speak the protocol are reached by their BaseURL.
type OpenAIConfig struct {
	// BaseURL is the API root, up to and including "/v1"; default
	// "https://api.openai.com/v1".
	BaseURL string
	// APIKey is sent as a bearer token when not empty.
	APIKey string
	// Model is the speech model; default "tts-1".
	Model string
	// Voice is used when a Request names none; default "alloy".
	Voice string
	// HTTPClient sends the requests; default a client on
	// http.DefaultTransport with no overall timeout (the audio streams for
	// as long as it lasts).
	HTTPClient *http.Client
	// Timeout bounds the wait for the response headers; default 30 s.
	Timeout time.Duration
}

// openAIRate is the rate of response_format "pcm": 24 kHz, 16-bit
// little-endian, mono.
const openAIRate = 24000

// OpenAI is a client of the OpenAI speech protocol. It is safe for
// concurrent use.
type OpenAI struct {
	cfg      OpenAIConfig
	endpoint string
}

// NewOpenAI returns a client for cfg, with defaults filled in. It fails if
// BaseURL is not an absolute http(s) URL or Timeout is negative.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = "https://api.openai.com/v1"
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.Model == "" {
		cfg.Model = "tts-1"
	}
	if cfg.Voice == "" {
		cfg.Voice = "alloy"
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("tts: base URL %q: want an absolute http or https URL", cfg.BaseURL)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("tts: negative timeout %v", cfg.Timeout)
	}
	return &OpenAI{cfg: cfg, endpoint: cfg.BaseURL + "/audio/speech"}, nil
}

type speechRequest struct {
	Model          string  `json:"model"`
	Input          string  `json:"input"`
	Voice          string  `json:"voice"`
	ResponseFormat string  `json:"response_format"`
	Speed          float64 `json:"speed,omitempty"`
}

// Synthesize posts r to {base}/audio/speech asking for raw 24 kHz PCM and
// returns the response body as it arrives, converted to r.SampleRate.
// Request.Voice may carry an "openai:" prefix (the voice catalog's form);
// Language is not sent (these voices speak the language of the text). Speed
// is clamped to the protocol's 0.25 to 4. An HTTP error status returns an
// *APIError with the server's message.
func (c *OpenAI) Synthesize(ctx context.Context, r Request) (Audio, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if strings.TrimSpace(r.Text) == "" {
		return nil, fmt.Errorf("%w: empty text", ErrBadRequest)
	}
	voice := strings.TrimPrefix(r.Voice, "openai:")
	if voice == "" {
		voice = c.cfg.Voice
	}
	sr := speechRequest{Model: c.cfg.Model, Input: r.Text, Voice: voice, ResponseFormat: "pcm"}
	if r.Speed != 0 && r.Speed != 1 {
		sr.Speed = min(4, max(0.25, r.Speed))
	}
	body, err := json.Marshal(sr)
	if err != nil {
		return nil, fmt.Errorf("tts: encode request: %w", err)
	}
	var conv *resample.Resampler
	if r.SampleRate != openAIRate {
		if conv, err = resample.New(openAIRate, r.SampleRate, resample.QualityHigh); err != nil {
			return nil, fmt.Errorf("tts: %w", err)
		}
	}

	sctx, cancel := context.WithCancelCause(ctx)
	req, err := http.NewRequestWithContext(sctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		cancel(nil)
		return nil, fmt.Errorf("tts: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	timer := time.AfterFunc(c.cfg.Timeout, func() { cancel(ErrTimeout) })
	resp, err := c.cfg.HTTPClient.Do(req)
	timer.Stop()
	if err != nil {
		cause := context.Cause(sctx)
		cancel(nil)
		switch {
		case errors.Is(cause, ErrTimeout):
			return nil, fmt.Errorf("tts: POST %s: %w after %v", c.endpoint, ErrTimeout, c.cfg.Timeout)
		case ctx.Err() != nil:
			return nil, fmt.Errorf("tts: POST %s: %w", c.endpoint, context.Cause(ctx))
		}
		return nil, fmt.Errorf("tts: POST %s: %w", c.endpoint, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		cancel(nil)
		return nil, parseAPIError(resp.StatusCode, b)
	}
	src := &pcmBody{ctx: sctx, cancel: cancel, body: resp.Body}
	context.AfterFunc(sctx, func() { _ = resp.Body.Close() })
	if conv == nil {
		return src, nil
	}
	return Resample(src, conv, nil), nil
}

// pcmBody reads a body of 16-bit little-endian samples as Audio.
type pcmBody struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	body   io.ReadCloser
	closed atomic.Bool
	raw    [4096]byte
	have   int // bytes of raw held over: 0, or 1 after an odd read
	err    error
}

func (b *pcmBody) Read(p []int16) (int, error) {
	for {
		if b.err != nil {
			return 0, b.err
		}
		if len(p) == 0 {
			return 0, nil
		}
		want := min(len(b.raw), 2*len(p))
		n, err := b.body.Read(b.raw[b.have:want])
		total := b.have + n
		even := total &^ 1
		got, _ := pcm.BytesToInt16To(p, b.raw[:even])
		if total > even {
			b.raw[0] = b.raw[even]
		}
		b.have = total - even
		if err != nil {
			switch {
			case b.closed.Load():
				b.err = ErrClosed
			case context.Cause(b.ctx) != nil:
				b.err = context.Cause(b.ctx)
			case errors.Is(err, io.EOF):
				b.err = io.EOF
			default:
				b.err = fmt.Errorf("tts: read audio: %w", err)
			}
			b.cancel(nil)
		}
		if got > 0 {
			return got, nil
		}
	}
}

func (b *pcmBody) Close() error {
	if b.closed.Swap(true) {
		return nil
	}
	b.cancel(ErrClosed)
	_ = b.body.Close()
	return nil
}
