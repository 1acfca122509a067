package pocketsphinx

import (
	"context"
	"sync"

	"github.com/voiced/voiced/ai/stt"
)

// Pool is a bounded set of Recognizers of one Config, made as they are
// needed: a node's offline transcriber. A Recognizer decodes one segment
// at a time, so with one for the node every caller's turn waits for the
// other callers' turns; a Pool decodes up to Size segments at once. Each
// Recognizer holds its own copy of the model (libpocketsphinx 5prealpha
// cannot share one between decoders): 95 MB with the language model, so
// Size bounds the memory as well as the parallelism. Decoding is
// CPU-bound: more Recognizers than cores add memory, not speed.
type Pool struct {
	cfg  Config
	size int
	// slots holds one token per Recognizer that may still be made or is
	// idle; idle holds the idle ones.
	slots chan struct{}
	mu    sync.Mutex
	idle  []*Recognizer
	all   []*Recognizer
	err   error // the first load's failure: later calls fail alike
	done  bool
	// sessions is how many prepared sessions are live (Prepare);
	// loading whether the background loader is making recognizers.
	sessions int
	loading  bool
}

// NewPool returns a Pool of at most size Recognizers (at least 1). None is
// loaded until the first Transcribe.
func NewPool(cfg Config, size int) *Pool {
	size = max(size, 1)
	p := &Pool{cfg: cfg, size: size, slots: make(chan struct{}, size)}
	for range size {
		p.slots <- struct{}{}
	}
	return p
}

// Size is the most Recognizers the pool makes.
func (p *Pool) Size() int { return p.size }

// Transcribe decodes r on an idle Recognizer, making one (about 0.5 s)
// if fewer than Size exist, else waiting for one to be free or ctx to end.
// A model that does not load fails this and every later call with New's
// error.
func (p *Pool) Transcribe(ctx context.Context, r stt.Request) (stt.Result, error) {
	if len(r.PCM) == 0 {
		return stt.Result{}, stt.ErrNoAudio
	}
	select {
	case <-p.slots:
	case <-ctx.Done():
		return stt.Result{}, context.Cause(ctx)
	}
	defer func() { p.slots <- struct{}{} }()
	rec, err := p.get()
	if err != nil {
		return stt.Result{}, err
	}
	defer p.put(rec)
	return rec.Transcribe(ctx, r)
}

// get returns an idle Recognizer or a new one. The caller holds a slot.
func (p *Pool) get() (*Recognizer, error) {
	p.mu.Lock()
	if p.done {
		p.mu.Unlock()
		return nil, ErrClosed
	}
	if p.err != nil {
		p.mu.Unlock()
		return nil, p.err
	}
	if n := len(p.idle); n > 0 {
		rec := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return rec, nil
	}
	p.mu.Unlock()
	return p.make()
}

// make loads a new Recognizer and counts it in the pool (not idle). The
// caller holds a slot.
func (p *Pool) make() (*Recognizer, error) {
	rec, err := New(p.cfg)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		if p.err == nil {
			p.err = err
		}
		return nil, err
	}
	if p.done {
		rec.Close()
		return nil, ErrClosed
	}
	p.all = append(p.all, rec)
	return rec, nil
}

func (p *Pool) put(rec *Recognizer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	p.idle = append(p.idle, rec)
}

// Close frees every Recognizer, waiting for decodes in progress; later
// calls fail with ErrClosed. It is idempotent.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.done = true
	all := p.all
	p.all, p.idle = nil, nil
	p.mu.Unlock()
	for _, rec := range all {
		rec.Close()
	}
	return nil
}

// Prepare implements stt.Preparer: while fewer Recognizers exist than
// live prepared sessions (and than Size), the pool makes them in the
// background, one at a time, so a session's first segment finds one
// ready instead of waiting for the loads of every session that began
// with it (10 at once on a cold node: the last one's recognizer came
// 3.6 s after the first segment began). Recognizers stay when sessions
// end, as after any use.
func (p *Pool) Prepare() (done func()) {
	p.mu.Lock()
	p.sessions++
	start := !p.loading
	p.loading = true
	p.mu.Unlock()
	if start {
		go p.load()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			p.sessions--
			p.mu.Unlock()
		})
	}
}

// load makes idle Recognizers while fewer exist than live prepared
// sessions, then stops (Prepare starts it again).
func (p *Pool) load() {
	for {
		p.mu.Lock()
		if p.done || p.err != nil || len(p.all) >= min(p.sessions, p.size) {
			p.loading = false
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		// A slot: the Recognizer counts against Size like one in use;
		// none free means Size exist or are being made.
		select {
		case <-p.slots:
		default:
			p.mu.Lock()
			p.loading = false
			p.mu.Unlock()
			return
		}
		rec, err := p.make()
		if err == nil {
			p.put(rec)
		}
		p.slots <- struct{}{}
		if err != nil {
			p.mu.Lock()
			p.loading = false
			p.mu.Unlock()
			return
		}
	}
}

// Stream begins a segment on one of the pool's Recognizers (making one
// if fewer than Size exist), held until Finish or Close. When all Size are
// busy it does not wait: the stream keeps the audio and takes a
// Recognizer as soon as one is free, at a later Write or at Finish (which
// waits for one, or for ctx), then decodes what it kept. So a burst of
// turns beyond Size delays only the turns that find none, by the decoding
// of what they kept, and no turn waits for another turn's whole decoding.
func (p *Pool) Stream(ctx context.Context, r stt.Request) (stt.Stream, error) {
	s := &poolStream{p: p}
	if err := s.attach(ctx, false); err != nil {
		return nil, err
	}
	if err := s.Write(r.PCM); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// poolStream is a Pool's segment: a Recognizer's stream once it has one,
// and until then the audio kept for it.
type poolStream struct {
	p    *Pool
	rec  *Recognizer
	s    stt.Stream
	kept []int16
	done bool
}

// attach takes a slot and a Recognizer for the stream, waiting for one
// only if wait, and feeds it what was kept.
func (s *poolStream) attach(ctx context.Context, wait bool) error {
	if s.s != nil {
		return nil
	}
	if wait {
		select {
		case <-s.p.slots:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	} else {
		select {
		case <-s.p.slots:
		default:
			return nil
		}
	}
	rec, err := s.p.get()
	if err != nil {
		s.p.slots <- struct{}{}
		return err
	}
	st, err := rec.Stream(ctx, stt.Request{PCM: s.kept})
	if err != nil {
		s.p.put(rec)
		s.p.slots <- struct{}{}
		return err
	}
	s.rec, s.s, s.kept = rec, st, nil
	return nil
}

func (s *poolStream) Write(pcm []int16) error {
	if s.done {
		return ErrClosed
	}
	if s.s == nil {
		s.kept = append(s.kept, pcm...)
		return s.attach(context.Background(), false)
	}
	return s.s.Write(pcm)
}

func (s *poolStream) Partial() string {
	if s.s == nil {
		return ""
	}
	return s.s.Partial()
}

func (s *poolStream) Finish(ctx context.Context) (stt.Result, error) {
	if s.done {
		return stt.Result{}, ErrClosed
	}
	defer s.Close()
	if s.s == nil && len(s.kept) == 0 {
		return stt.Result{}, stt.ErrNoAudio
	}
	if err := s.attach(ctx, true); err != nil {
		return stt.Result{}, err
	}
	return s.s.Finish(ctx)
}

func (s *poolStream) Close() error {
	if s.done {
		return nil
	}
	s.done = true
	s.kept = nil
	if s.s != nil {
		s.s.Close()
		s.p.put(s.rec)
		s.p.slots <- struct{}{}
	}
	return nil
}
