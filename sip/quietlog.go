package sip

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// quietHandler wraps the handler sipgo logs through. sipgo logs parse
// failures and similar per message, with the raw data; a scanner or a
// flood would turn that into a log per packet. quietHandler passes only
// warnings and errors (debug too when the base logger wants it), drops
// the "data" attribute, and lets one record per message text through
// every interval, counting the others in "suppressed".
type quietHandler struct {
	h  slog.Handler
	st *quietState
}

type quietState struct {
	interval time.Duration
	now      func() time.Time
	mu       sync.Mutex
	last     map[string]time.Time
	count    map[string]int
}

func newQuietHandler(h slog.Handler, interval time.Duration, now func() time.Time) *quietHandler {
	return &quietHandler{h: h, st: &quietState{interval: interval, now: now, last: map[string]time.Time{}, count: map[string]int{}}}
}

func (q *quietHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return (l >= slog.LevelWarn || q.h.Enabled(ctx, slog.LevelDebug)) && q.h.Enabled(ctx, l)
}

func (q *quietHandler) Handle(ctx context.Context, r slog.Record) error {
	st := q.st
	now := st.now()
	st.mu.Lock()
	if t, ok := st.last[r.Message]; ok && now.Sub(t) < st.interval {
		st.count[r.Message]++
		st.mu.Unlock()
		return nil
	}
	if len(st.last) > 1024 { // messages are constant strings; this is a backstop
		clear(st.last)
		clear(st.count)
	}
	n := st.count[r.Message]
	st.last[r.Message], st.count[r.Message] = now, 0
	st.mu.Unlock()
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "data" {
			out.AddAttrs(a)
		}
		return true
	})
	if n > 0 {
		out.AddAttrs(slog.Int("suppressed", n))
	}
	return q.h.Handle(ctx, out)
}

func (q *quietHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &quietHandler{h: q.h.WithAttrs(as), st: q.st}
}

func (q *quietHandler) WithGroup(name string) slog.Handler {
	return &quietHandler{h: q.h.WithGroup(name), st: q.st}
}
