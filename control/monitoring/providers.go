package monitoring

import (
	"sync"
	"time"
)

// ProviderHealth is a provider's outcomes over the recent window.
type ProviderHealth struct {
	Requests int
	Errors   int
}

// Provider kinds the heartbeat reads: the AI providers behind every call
// (a failing one degrades the media products) and the payment provider
// (billing). Other kinds are kept but affect nothing.
const (
	ProviderLLM      = "llm"
	ProviderSTT      = "stt"
	ProviderTTS      = "tts"
	ProviderPayments = "payments"
)

// windowBuckets of windowBucket make the error-rate window: five minutes
// in one-minute steps, so an old burst ages out a minute at a time.
const (
	windowBuckets = 5
	windowBucket  = time.Minute
)

// Window counts provider outcomes over the last five minutes, per
// provider kind. The ai/ callers feed it with Record once per request (not
// per frame); the heartbeat reads Health. Safe for concurrent use.
type Window struct {
	now func() time.Time
	mu  sync.Mutex
	// kinds holds each kind's ring of buckets, indexed by minute modulo
	// windowBuckets; minute says which minute a bucket holds.
	kinds map[string]*[windowBuckets]bucket
}

type bucket struct {
	minute           int64
	requests, errors int
}

// NewWindow returns an empty window on the clock now (nil: time.Now).
func NewWindow(now func() time.Time) *Window {
	if now == nil {
		now = time.Now
	}
	return &Window{now: now, kinds: map[string]*[windowBuckets]bucket{}}
}

// Record counts one request to a provider of kind, failed when err is
// non-nil. A nil Window records nothing.
func (w *Window) Record(kind string, err error) {
	if w == nil {
		return
	}
	m := w.now().UnixNano() / int64(windowBucket)
	w.mu.Lock()
	defer w.mu.Unlock()
	ring := w.kinds[kind]
	if ring == nil {
		ring = new([windowBuckets]bucket)
		w.kinds[kind] = ring
	}
	b := &ring[m%windowBuckets]
	if b.minute != m {
		*b = bucket{minute: m}
	}
	b.requests++
	if err != nil {
		b.errors++
	}
}

// Health sums each kind's buckets of the last five minutes.
func (w *Window) Health() map[string]ProviderHealth {
	out := map[string]ProviderHealth{}
	if w == nil {
		return out
	}
	m := w.now().UnixNano() / int64(windowBucket)
	w.mu.Lock()
	defer w.mu.Unlock()
	for kind, ring := range w.kinds {
		var h ProviderHealth
		for _, b := range ring {
			if b.minute > m-windowBuckets && b.minute <= m {
				h.Requests += b.requests
				h.Errors += b.errors
			}
		}
		out[kind] = h
	}
	return out
}
