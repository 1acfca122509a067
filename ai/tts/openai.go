package tts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"

	"github.com/voiced/voiced/ai/internal/oai"
	"github.com/voiced/voiced/codecs/pcm"
	"github.com/voiced/voiced/codecs/resample"
)

// OpenAIConfig configures an OpenAI-compatible speech client. Local servers
// that speak the protocol are reached by their BaseURL.
type OpenAIConfig struct {
	// BaseURL is the API root, up to and including "/v1"; default
	// "https://api.openai.com/v1".
	BaseURL string
	// APIKey is sent as a bearer token when not empty. OPENAI_API_KEY and
	// the other OPENAI_* variables are not read.
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

// OpenAI is a client of the OpenAI speech protocol, through openai-go. It
// is safe for concurrent use.
type OpenAI struct {
	cfg    OpenAIConfig
	speech openai.AudioSpeechService
}

// NewOpenAI returns a client for cfg, with defaults filled in. It fails if
// BaseURL is not an absolute http(s) URL or Timeout is negative.
//
// A failed request is not retried: the caller is waiting to hear the
// answer, and an error lets the agent fall back at once (docs/decisions.md).
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = oai.DefaultBaseURL
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.Model == "" {
		cfg.Model = "tts-1"
	}
	if cfg.Voice == "" {
		cfg.Voice = "alloy"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("tts: negative timeout %v", cfg.Timeout)
	}
	opts, err := oai.Options(oai.Config{Service: "tts", BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, HTTPClient: cfg.HTTPClient})
	if err != nil {
		return nil, err
	}
	return &OpenAI{cfg: cfg, speech: openai.NewAudioSpeechService(opts...)}, nil
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
	params := openai.AudioSpeechNewParams{
		Model:          c.cfg.Model,
		Input:          r.Text,
		Voice:          openai.AudioSpeechNewParamsVoiceUnion{OfString: param.NewOpt(voice)},
		ResponseFormat: openai.AudioSpeechNewParamsResponseFormatPCM,
	}
	if r.Speed != 0 && r.Speed != 1 {
		params.Speed = param.NewOpt(min(4, max(0.25, r.Speed)))
	}
	var conv *resample.Resampler
	if r.SampleRate != openAIRate {
		var err error
		if conv, err = resample.New(openAIRate, r.SampleRate, resample.QualityHigh); err != nil {
			return nil, fmt.Errorf("tts: %w", err)
		}
	}

	// sctx lives as long as the audio; the timer cancels it if the headers
	// are late.
	sctx, cancel := context.WithCancelCause(ctx)
	timer := time.AfterFunc(c.cfg.Timeout, func() { cancel(ErrTimeout) })
	var raw *http.Response
	resp, err := c.speech.New(sctx, params, option.WithResponseInto(&raw))
	timer.Stop()
	if err != nil {
		cause := context.Cause(sctx)
		cancel(nil)
		endpoint := c.cfg.BaseURL + "/audio/speech"
		switch {
		case errors.Is(cause, ErrTimeout):
			return nil, fmt.Errorf("tts: POST %s: %w after %v", endpoint, ErrTimeout, c.cfg.Timeout)
		case ctx.Err() != nil:
			return nil, fmt.Errorf("tts: POST %s: %w", endpoint, context.Cause(ctx))
		}
		if ae := oai.HTTPError("tts", raw, err); ae != nil {
			return nil, ae
		}
		return nil, fmt.Errorf("tts: POST %s: %w", endpoint, err)
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
