package espeak

/*
#cgo pkg-config: espeak-ng
#include <stdint.h>
#include <stdlib.h>
#include <espeak-ng/speak_lib.h>

int voiced_synth(const char *text, size_t size, uintptr_t handle);
*/
import "C"

import (
	"context"
	"fmt"
	"path"
	"runtime/cgo"
	"strings"
	"sync"
	"unsafe"

	"github.com/voiced/voiced/ai/tts"
	"github.com/voiced/voiced/codecs/resample"
)

// Config configures a Synth. The zero value speaks American English at
// espeak-ng's normal pace.
type Config struct {
	// Voice is used when a Request names neither a voice nor a language;
	// default "en-us".
	Voice string
	// Rate is the normal speaking rate in words per minute, 80 to 450;
	// default 175. A Request's Speed scales it.
	Rate int
	// Queue is how many requests may wait for the synthesizer; default 256.
	// Synthesize fails with ErrBusy when it is full.
	Queue int
	// MaxText is the longest text of one request, in bytes; default 4096.
	MaxText int
}

// Synth speaks text with espeak-ng. Requests are synthesized one at a time,
// in order, by one goroutine that owns the library (see the package doc),
// each streamed out as the library produces it. It is safe for concurrent
// use.
type Synth struct {
	cfg        Config
	nativeRate int
	// voices maps the lowercase identifiers of the language voices, and
	// their base names, to the identifier espeak-ng selects them by.
	voices   map[string]string
	variants map[string]bool
	// languages maps every language a voice speaks to the identifier of
	// the voice that prefers it most.
	languages map[string]string

	mu     sync.Mutex // guards closed and the send on jobs
	closed bool
	jobs   chan *stream
	quit   chan struct{}
	done   chan struct{}

	poolMu sync.Mutex
	pool   map[int][]*resample.Resampler // idle resamplers by output rate
}

// maxPooled bounds the idle resamplers kept per output rate.
const maxPooled = 8

// New starts a synthesizer. It fails with ErrUnavailable when libespeak-ng
// cannot load its data and with ErrUnknownVoice when cfg.Voice is not
// installed.
func New(cfg Config) (*Synth, error) {
	if cfg.Voice == "" {
		cfg.Voice = "en-us"
	}
	if cfg.Rate == 0 {
		cfg.Rate = int(C.espeakRATE_NORMAL)
	}
	if cfg.Rate < int(C.espeakRATE_MINIMUM) || cfg.Rate > int(C.espeakRATE_MAXIMUM) {
		return nil, fmt.Errorf("espeak: rate %d words per minute: want %d to %d", cfg.Rate, C.espeakRATE_MINIMUM, C.espeakRATE_MAXIMUM)
	}
	if cfg.Queue <= 0 {
		cfg.Queue = 256
	}
	if cfg.MaxText <= 0 {
		cfg.MaxText = 4096
	}
	vs, err := Voices()
	if err != nil {
		return nil, err
	}
	vars, err := Variants()
	if err != nil {
		return nil, err
	}
	s := &Synth{
		cfg:       cfg,
		voices:    map[string]string{},
		variants:  map[string]bool{},
		languages: map[string]string{},
		jobs:      make(chan *stream, cfg.Queue),
		quit:      make(chan struct{}),
		done:      make(chan struct{}),
		pool:      map[int][]*resample.Resampler{},
	}
	prio := map[string]int{}
	for _, v := range vs {
		if strings.HasPrefix(v.Identifier, "mb/") {
			continue // MBROLA voices need the mbrola program and its voice data
		}
		s.voices[strings.ToLower(path.Base(v.Identifier))] = v.Identifier
		s.voices[strings.ToLower(v.Identifier)] = v.Identifier
		for _, l := range v.Languages {
			name := strings.ToLower(l.Name)
			if p, ok := prio[name]; !ok || l.Priority < p {
				prio[name] = l.Priority
				s.languages[name] = v.Identifier
			}
		}
	}
	for _, v := range vars {
		s.variants[strings.ToLower(path.Base(v.Identifier))] = true
	}
	if s.cfg.Voice, err = s.voiceName(cfg.Voice); err != nil {
		return nil, err
	}
	mu.Lock()
	s.nativeRate = sampleRate
	mu.Unlock()
	go s.loop()
	return s, nil
}

// SampleRate returns the rate espeak-ng synthesizes at (22050 Hz); the
// Audio of a request is converted from it to the request's rate.
func (s *Synth) SampleRate() int { return s.nativeRate }

// voiceName normalizes a voice as the catalog names it ("espeak:en-us+f3")
// or as espeak-ng's -v option takes it (a voice file "gmw/en-US" or its base
// name, or a language a voice speaks, "en-gb", each with an optional
// "+variant") and checks that it is installed.
func (s *Synth) voiceName(v string) (string, error) {
	name := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(v), "espeak:"))
	base, variant, hasVariant := strings.Cut(name, "+")
	id, ok := s.voices[base]
	if !ok {
		id, ok = s.languages[base]
	}
	if !ok || (hasVariant && !s.variants[variant]) {
		return "", fmt.Errorf("%w: %q", ErrUnknownVoice, v)
	}
	if hasVariant {
		return id + "+" + variant, nil
	}
	return id, nil
}

// language returns the voice that best speaks a BCP-47 tag: the tag itself
// ("en-us"), else its primary language ("en").
func (s *Synth) language(tag string) (string, error) {
	l := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(tag), "_", "-"))
	if id, ok := s.languages[l]; ok {
		return id, nil
	}
	if p, _, ok := strings.Cut(l, "-"); ok {
		if id, ok := s.languages[p]; ok {
			return id, nil
		}
	}
	return "", fmt.Errorf("%w: no voice for language %q", ErrUnknownVoice, tag)
}

// Synthesize queues r and returns its Audio at once; samples become
// readable as espeak-ng produces them, one 60 ms buffer at a time, converted
// to r.SampleRate. The voice is r.Voice ("espeak:<voice>" or
// "espeak:<voice>+<variant>" as the catalog names them, or espeak-ng's own
// names), else the best voice for r.Language, else the Config's. Text is
// plain text (no SSML). ctx bounds the synthesis; Close on the Audio stops
// it within one buffer.
func (s *Synth) Synthesize(ctx context.Context, r tts.Request) (tts.Audio, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	text := strings.ReplaceAll(r.Text, "\x00", " ")
	if strings.TrimSpace(text) == "" {
		return nil, fmt.Errorf("%w: empty text", tts.ErrBadRequest)
	}
	if len(text) > s.cfg.MaxText {
		return nil, fmt.Errorf("%w: text of %d bytes, the limit is %d", tts.ErrBadRequest, len(text), s.cfg.MaxText)
	}
	st := &stream{text: text, notify: make(chan struct{}, 1), ctx: ctx}
	var err error
	switch {
	case r.Voice != "":
		st.voice, err = s.voiceName(r.Voice)
	case r.Language != "":
		st.voice, err = s.language(r.Language)
	default:
		st.voice = s.cfg.Voice
	}
	if err != nil {
		return nil, err
	}
	speed := r.Speed
	if speed == 0 {
		speed = 1
	}
	st.wpm = min(int(C.espeakRATE_MAXIMUM), max(int(C.espeakRATE_MINIMUM), int(float64(s.cfg.Rate)*speed+0.5)))
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	conv, err := s.resampler(r.SampleRate)
	if err != nil {
		return nil, err
	}

	// Registered before the worker can see st, which reads stopAfter.
	st.stopAfter = context.AfterFunc(ctx, func() { st.stop(context.Cause(ctx)) })
	if err := s.enqueue(st); err != nil {
		st.stopAfter()
		s.release(conv)
		return nil, err
	}
	return tts.Resample(st, conv, s.release), nil
}

// enqueue hands st to the synthesizer goroutine.
func (s *Synth) enqueue(st *stream) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	select {
	case s.jobs <- st:
		return nil
	default:
		return fmt.Errorf("%w: %d requests waiting", ErrBusy, s.cfg.Queue)
	}
}

// resampler returns an idle resampler from espeak-ng's rate to rate, or a
// new one (designing its filter takes a few ms).
func (s *Synth) resampler(rate int) (*resample.Resampler, error) {
	s.poolMu.Lock()
	if p := s.pool[rate]; len(p) > 0 {
		r := p[len(p)-1]
		s.pool[rate] = p[:len(p)-1]
		s.poolMu.Unlock()
		return r, nil
	}
	s.poolMu.Unlock()
	r, err := resample.New(s.nativeRate, rate, resample.QualityHigh)
	if err != nil {
		return nil, fmt.Errorf("espeak: %w", err)
	}
	return r, nil
}

// release returns a Reset resampler to the pool.
func (s *Synth) release(r *resample.Resampler) {
	_ = r.Reset()
	s.poolMu.Lock()
	defer s.poolMu.Unlock()
	if p := s.pool[r.OutputRate()]; len(p) < maxPooled {
		s.pool[r.OutputRate()] = append(p, r)
		return
	}
	_ = r.Close()
}

// Close stops the synthesizer: queued requests fail with ErrClosed, the one
// being synthesized finishes, and Close returns once its goroutine has
// exited. Later Synthesize calls fail with ErrClosed.
func (s *Synth) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.done
		return nil
	}
	s.closed = true
	close(s.quit)
	s.mu.Unlock()
	<-s.done
	return nil
}

// loop is the synthesizer goroutine: it owns every synthesis call.
func (s *Synth) loop() {
	defer close(s.done)
	for s.next() {
	}
	// Fail what is still queued; Synthesize sends nothing once closed.
	for {
		select {
		case st := <-s.jobs:
			st.finish(ErrClosed)
		default:
			return
		}
	}
}

// next runs one queued request and reports whether to go on. Closing wins
// over queued work.
func (s *Synth) next() bool {
	select {
	case <-s.quit:
		return false
	default:
	}
	select {
	case st := <-s.jobs:
		s.run(st)
		return true
	case <-s.quit:
		return false
	}
}

// run synthesizes one request with the library lock held.
func (s *Synth) run(st *stream) {
	if st.stopped.Load() {
		st.finish(nil)
		return
	}
	h := cgo.NewHandle(st)
	defer h.Delete()
	ctext := C.CString(st.text)
	defer C.free(unsafe.Pointer(ctext))

	mu.Lock()
	err := st.selectVoice()
	if err == nil {
		C.espeak_SetParameter(C.espeakRATE, C.int(st.wpm), 0)
		if rc := C.voiced_synth(ctext, C.size_t(len(st.text)+1), C.uintptr_t(h)); rc != C.EE_OK {
			err = fmt.Errorf("espeak: synthesis failed (espeak_ERROR %d)", int(rc))
		}
	}
	mu.Unlock()
	st.finish(err)
}

// selectVoice sets the library's voice for st; mu must be held.
func (st *stream) selectVoice() error {
	cv := C.CString(st.voice)
	defer C.free(unsafe.Pointer(cv))
	if rc := C.espeak_SetVoiceByName(cv); rc != C.EE_OK {
		return fmt.Errorf("%w: espeak-ng refused voice %q (espeak_ERROR %d)", ErrUnknownVoice, st.voice, int(rc))
	}
	return nil
}

// voicedSynthChunk receives one buffer from espeak-ng's callback (wav is nil
// at the end of the text) for the stream with handle h. Returning 1 aborts
// the synthesis.
//
//export voicedSynthChunk
func voicedSynthChunk(wav *C.short, n C.int, h C.uintptr_t) C.int {
	st, ok := cgo.Handle(h).Value().(*stream)
	if !ok || st.stopped.Load() {
		return 1
	}
	if wav != nil && n > 0 {
		st.push(unsafe.Slice((*int16)(unsafe.Pointer(wav)), int(n)))
	}
	return 0
}
