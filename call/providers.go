package call

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/ai/stt"
	"github.com/voiced/voiced/ai/stt/pocketsphinx"
	"github.com/voiced/voiced/ai/tts"
	"github.com/voiced/voiced/ai/tts/espeak"
	"github.com/voiced/voiced/media/agent"
)

// Providers are the conversation engine's AI providers: OpenAI-compatible
// servers when a base URL is set, else the offline defaults (the echo
// model, espeak-ng, PocketSphinx). One set serves every call of the node;
// they are safe for concurrent use.
type Providers struct {
	LLM     agent.LLM
	STT     agent.STT
	TTS     agent.TTS
	closers []func()
	// out receives each request's outcome (Record).
	out *outcomes
}

// ProvidersConfig names the providers: values only, empty base URLs for
// the offline defaults.
type ProvidersConfig struct {
	LLMBaseURL, LLMAPIKey, LLMModel string
	TTSBaseURL, TTSAPIKey, TTSModel string
	STTBaseURL, STTAPIKey, STTModel string
}

// NewProviders returns the providers c names.
func NewProviders(c ProvidersConfig) (*Providers, error) {
	p := &Providers{}
	if c.LLMBaseURL == "" {
		p.LLM = llm.NewEcho(llm.EchoConfig{WordByWord: true})
	} else {
		m, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: c.LLMBaseURL, APIKey: c.LLMAPIKey, Model: c.LLMModel})
		if err != nil {
			return nil, fmt.Errorf("--llm-base-url: %w", err)
		}
		p.LLM = m
	}
	if c.TTSBaseURL == "" {
		s, err := espeak.New(espeak.Config{})
		if err != nil {
			return nil, fmt.Errorf("espeak-ng: %w", err)
		}
		p.closers = append(p.closers, func() { s.Close() })
		p.TTS = catalogVoices{Synthesizer: s, provider: "espeak"}
	} else {
		s, err := tts.NewOpenAI(tts.OpenAIConfig{BaseURL: c.TTSBaseURL, APIKey: c.TTSAPIKey, Model: c.TTSModel})
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("--tts-base-url: %w", err)
		}
		p.TTS = catalogVoices{Synthesizer: s, provider: "openai"}
	}
	if c.STTBaseURL == "" {
		ps := newLazySphinx()
		p.STT = ps
		p.closers = append(p.closers, ps.close)
	} else {
		s, err := stt.NewOpenAI(stt.OpenAIConfig{BaseURL: c.STTBaseURL, APIKey: c.STTAPIKey, Model: c.STTModel})
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("--stt-base-url: %w", err)
		}
		p.STT = s
	}
	p.out = &outcomes{}
	p.LLM, p.TTS = recordedLLM{p.LLM, p.out}, recordedTTS{p.TTS, p.out}
	if st, ok := p.STT.(stt.Streamer); ok {
		p.STT = recordedStreamer{recordedSTT{st, p.out}, st}
	} else {
		p.STT = recordedSTT{p.STT, p.out}
	}
	return p, nil
}

// Record sends each provider request's outcome to r from now on (the
// control plane's provider window, for the status heartbeat).
func (p *Providers) Record(r ProviderOutcomes) {
	if p != nil && p.out != nil {
		p.out.set(r)
	}
}

// Close frees the offline providers' resources.
func (p *Providers) Close() {
	if p == nil {
		return
	}
	for _, f := range p.closers {
		f()
	}
}

// catalogVoices maps the voice catalog's names ("espeak:en-us+f3") to the
// provider's own ("en-us+f3"); a voice of another provider falls back to
// the provider's default for the language.
type catalogVoices struct {
	tts.Synthesizer
	provider string
}

func (v catalogVoices) Synthesize(ctx context.Context, r tts.Request) (tts.Audio, error) {
	if p, name, ok := strings.Cut(r.Voice, ":"); ok {
		if p == v.provider {
			r.Voice = name
		} else {
			r.Voice = ""
		}
	}
	return v.Synthesizer.Synthesize(ctx, r)
}

// lazySphinx is the offline default transcriber: PocketSphinx with its
// American English language model, a pool of one decoder per core
// (pocketsphinx.Pool), each loaded when first needed (about 0.5 s and 95
// MB) rather than at every start. With one decoder for the node, every
// caller's turn waited for the other callers' turns to decode. If the
// model cannot load, spoken turns fail their transcription
// (conversation.item.input_audio_transcription.failed) and text turns still
// work.
type lazySphinx struct {
	pool *pocketsphinx.Pool
}

// sphinxConfig is the offline transcriber's decoder: the en-us model
// without the second (flat-lexicon) search pass, which runs over the whole
// turn when it ends: with it, ending a streamed turn took 584 ms on
// average (24 espeak turns, the shared 2-core machine), without it 34-72
// ms, for 51-53% word accuracy instead of 56% (docs/decisions.md). And at
// most 3000 HMMs active per frame (the library's default is 30000): in
// babble or pink noise nothing scores well, the beam keeps far more of the
// search alive, and a stream took 0.8 of a core per second of audio (0.4
// clean), so on a busy node the live decoders fell behind the callers and
// an interrupted response waited seconds for its turn's words. The cap
// halves that (0.4 in noise, 0.29 clean) at the same clean word accuracy
// (38.9% on the noise-test set; 8 points less in pink noise).
var sphinxConfig = pocketsphinx.Config{Args: []string{"-fwdflat", "no", "-maxhmmpf", "3000"}}

// sphinxPerCore is how many decoders the pool may load per core. A
// streamed turn holds its decoder while the caller speaks, mostly idle
// waiting for audio, so the pool bounds the turns spoken at once rather
// than the decoding; each decoder is 95 MB, loaded only when that many
// turns overlap.
const sphinxPerCore = 8

func newLazySphinx() *lazySphinx {
	return &lazySphinx{pool: pocketsphinx.NewPool(sphinxConfig, sphinxPerCore*runtime.GOMAXPROCS(0))}
}

// Prepare has the pool make a session's decoder before its caller
// speaks (stt.Preparer).
func (l *lazySphinx) Prepare() (done func()) { return l.pool.Prepare() }

// Stream transcribes a turn as it is spoken (stt.Streamer).
func (l *lazySphinx) Stream(ctx context.Context, r stt.Request) (stt.Stream, error) {
	st, err := l.pool.Stream(ctx, r)
	if errors.Is(err, pocketsphinx.ErrModel) {
		err = fmt.Errorf("offline speech-to-text (pocketsphinx): %w", err)
	}
	return st, err
}

func (l *lazySphinx) Transcribe(ctx context.Context, r stt.Request) (stt.Result, error) {
	res, err := l.pool.Transcribe(ctx, r)
	if errors.Is(err, pocketsphinx.ErrModel) {
		err = fmt.Errorf("offline speech-to-text (pocketsphinx): %w", err)
	}
	return res, err
}

func (l *lazySphinx) close() { l.pool.Close() }
