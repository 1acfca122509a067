package dsp

/*
#cgo pkg-config: webrtc-audio-processing
#cgo CXXFLAGS: -std=c++11 -DWEBRTC_LINUX -DWEBRTC_POSIX -O2
#cgo noescape voiced_apm_process_near
#cgo nocallback voiced_apm_process_near
#cgo noescape voiced_apm_process_far
#cgo nocallback voiced_apm_process_far
#include "apm.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/voiced/voiced/media/prefetch"
)

// Result is what ProcessNear reports about one near frame.
type Result struct {
	// Speech is the frame's speech decision: Probability at or above
	// Config.SpeechThreshold.
	Speech bool
	// Probability is the estimated probability, 0..1, that the frame holds
	// near-end speech. It is the package's VAD run on the frame after echo
	// cancellation, noise suppression and gain control.
	Probability float32
	// APMVoice is the APM's own (GMM) voice detector's decision, only with
	// Config.APMVoiceDetection: true when it marked at least half of the
	// frame's 10 ms chunks as speech. It is reported for comparison; it
	// false-alarms far more in noise than Speech (see the package doc).
	APMVoice bool
}

// Processor runs one call's inbound audio through the WebRTC audio
// processing module (echo cancellation against the far-end reference, noise
// suppression, gain control) and the package's VAD.
//
// ProcessFar and ProcessNear may be called from different goroutines (the
// send and receive paths of a call); a mutex serialises them where there
// is an APM. ProcessNear takes one stream: it is not called concurrently
// with itself. Close must be called once to free the C state.
type Processor struct {
	mu sync.Mutex
	// apm is nil when no APM component is enabled. It is set by New and
	// never changes (Close frees it, and closed says so), so a VAD-only
	// processor can tell it is one without the lock.
	apm    *C.voiced_apm
	cfg    Config
	chunk  int // samples per 10 ms
	delay  C.int
	res    C.voiced_apm_result
	vad    VAD
	closed atomic.Bool // set under mu
}

// apmSteps names the voiced_apm_new step codes of apm.cc.
var apmSteps = [...]string{
	0: "create",
	1: "create",
	2: "initialize",
	3: "enable high-pass filter",
	4: "enable noise suppression",
	5: "enable echo cancellation",
	6: "enable gain control",
	7: "enable voice detection",
}

// New validates cfg and returns a Processor. A bad field gives an error that
// names it and wraps ErrSampleRate or ErrConfig; a failure inside the APM is
// an *APMError.
func New(cfg Config) (*Processor, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	p := &Processor{
		cfg:   cfg,
		chunk: cfg.SampleRate / 100,
		delay: C.int(cfg.EchoDelay / time.Millisecond),
	}
	p.vad.init(VADConfig{SampleRate: cfg.SampleRate, Threshold: cfg.SpeechThreshold})
	if cfg.NoiseReduction == NoiseReductionOff && !cfg.EchoCancellation && !cfg.AGC &&
		!cfg.HighPass && !cfg.APMVoiceDetection {
		return p, nil // VAD only: no cgo at all
	}
	cc := C.voiced_apm_config{
		sample_rate:     C.int(cfg.SampleRate),
		ns_level:        -1,
		aec_level:       1, // kModerateSuppression
		agc_target_dbfs: C.int(cfg.AGCTargetLevel),
		agc_gain_db:     C.int(cfg.AGCMaxGain),
		vad_likelihood:  C.int(cfg.VADLikelihood - VADVeryLow),
	}
	switch cfg.NoiseReduction {
	case NearField:
		cc.ns_level = 1 // kModerate
	case FarField:
		cc.ns_level = 3 // kVeryHigh
	}
	cc.aec = cbool(cfg.EchoCancellation)
	cc.agc = cbool(cfg.AGC)
	cc.high_pass = cbool(cfg.HighPass)
	cc.vad = cbool(cfg.APMVoiceDetection)
	var code, step C.int
	a := C.voiced_apm_new(&cc, &code, &step)
	if a == nil {
		op := "create"
		if int(step) < len(apmSteps) {
			op = apmSteps[step]
		}
		return nil, &APMError{Op: op, Code: int(code)}
	}
	p.apm = a
	return p, nil
}

// cbool converts a bool to a C int flag.
func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// Config returns the processor's configuration with defaults filled in.
func (p *Processor) Config() Config { return p.cfg }

// SetEchoDelay updates the echo delay hint (see Config.EchoDelay), for
// example when the jitter buffer's depth changes.
func (p *Processor) SetEchoDelay(d time.Duration) error {
	if d < 0 || d > MaxEchoDelay {
		return fmt.Errorf("echo delay %v outside [0, %v]: %w", d, MaxEchoDelay, ErrConfig)
	}
	p.mu.Lock()
	p.delay = C.int(d / time.Millisecond)
	p.mu.Unlock()
	return nil
}

// ProcessFar feeds the far-end reference: the agent's audio exactly as it
// is sent to the caller, at the processor's rate, a multiple of 10 ms
// (normally one 20 ms frame), in step with ProcessNear (one far frame per
// near frame). ref is only read. Without echo cancellation it does nothing.
func (p *Processor) ProcessFar(ref []int16) error {
	if len(ref) == 0 || len(ref)%p.chunk != 0 {
		return ErrFrameSize
	}
	if !p.cfg.EchoCancellation {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return ErrClosed
	}
	if rc := C.voiced_apm_process_far(p.apm, (*C.int16_t)(unsafe.Pointer(&ref[0])), C.int(len(ref))); rc != 0 {
		return &APMError{Op: "process far", Code: int(rc)}
	}
	return nil
}

// ProcessNear processes one near-end frame (the caller's audio, a multiple
// of 10 ms, normally 20 ms) in place and reports its speech decision. It
// makes at most one cgo call, whatever the frame length, and allocates
// nothing.
func (p *Processor) ProcessNear(frame []int16) (Result, error) {
	if len(frame) == 0 || len(frame)%p.chunk != 0 {
		return Result{}, ErrFrameSize
	}
	if p.apm == nil {
		// VAD only: nothing is shared with ProcessFar or Close, so no
		// lock; a mutex is two locked instructions on the processor's
		// cold cache line per frame of every call on the pacer.
		if p.closed.Load() {
			return Result{}, ErrClosed
		}
		v := p.vad.Process(frame)
		return Result{Probability: v.Probability, Speech: v.Speech}, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return Result{}, ErrClosed
	}
	var r Result
	if rc := C.voiced_apm_process_near(p.apm, (*C.int16_t)(unsafe.Pointer(&frame[0])), C.int(len(frame)), p.delay, &p.res); rc != 0 {
		return Result{}, &APMError{Op: "process near", Code: int(rc)}
	}
	r.APMVoice = p.cfg.APMVoiceDetection && 2*int(p.res.voiced_chunks) >= int(p.res.chunks)
	v := p.vad.Process(frame)
	r.Probability = v.Probability
	r.Speech = v.Speech
	return r, nil
}

// Close frees the processor's C state. Later calls return ErrClosed; Close
// is idempotent and always returns nil.
func (p *Processor) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed.Load() {
		if p.apm != nil {
			C.voiced_apm_free(p.apm)
		}
		p.closed.Store(true)
	}
	return nil
}

// AddHot adds to l the processor's and its VAD's state, what the next
// ProcessNear touches (media/prefetch).
func (p *Processor) AddHot(l *prefetch.List) {
	l.AddSpan(prefetch.Addr(p), int(unsafe.Sizeof(*p)))
}
