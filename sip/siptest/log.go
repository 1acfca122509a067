package siptest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/voiced/voiced/sip"
)

// Log is a sip.CallLog that keeps every end it is told.
type Log struct {
	mu    sync.Mutex
	ends  map[int64][]sip.End
	added chan struct{}
}

// NewLog returns an empty Log.
func NewLog() *Log { return &Log{ends: map[int64][]sip.End{}, added: make(chan struct{}, 1)} }

// Finish implements sip.CallLog.
func (l *Log) Finish(_ context.Context, id int64, e sip.End) error {
	l.mu.Lock()
	l.ends[id] = append(l.ends[id], e)
	l.mu.Unlock()
	select {
	case l.added <- struct{}{}:
	default:
	}
	return nil
}

// Ends returns every end recorded for call id (more than one is a bug).
func (l *Log) Ends(id int64) []sip.End {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]sip.End(nil), l.ends[id]...)
}

// Wait returns the end of call id, failing t after timeout.
func (l *Log) Wait(t testing.TB, id int64, timeout time.Duration) sip.End {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		if e := l.Ends(id); len(e) > 0 {
			return e[0]
		}
		select {
		case <-l.added:
		case <-time.After(10 * time.Millisecond):
		case <-deadline.C:
			t.Fatalf("call %d did not end within %v", id, timeout)
			return sip.End{}
		}
	}
}

// AdmitFunc adapts a function to sip.Admitter.
type AdmitFunc func(ctx context.Context, a sip.Arrival) (sip.Admission, error)

// Admit implements sip.Admitter.
func (f AdmitFunc) Admit(ctx context.Context, a sip.Arrival) (sip.Admission, error) { return f(ctx, a) }
