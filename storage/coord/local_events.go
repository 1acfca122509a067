package coord

import (
	"context"
	"slices"
	"sort"
	"strconv"
	"time"
)

// localStream is one event stream: entries in publish order, numbered from 1.
type localStream struct {
	entries []localEntry
	next    uint64
	groups  map[string]*localGroup
	notify  chan struct{} // closed and replaced on every publish
}

type localEntry struct {
	seq uint64
	ev  Event
}

// localGroup mirrors a Redis consumer group: the last entry handed out and the pending
// entries list of those delivered but not acknowledged.
type localGroup struct {
	last    uint64
	pending map[uint64]*localPending
}

type localPending struct {
	at    time.Time // last delivery
	count int
}

// Publish implements [EventStream].
func (l *Local) Publish(_ context.Context, stream string, ev Event) (string, error) {
	if err := CheckKey("stream", stream, 0, false); err != nil {
		return "", err
	}
	if ev.ID == "" {
		ev.ID = NewToken()
	}
	ev.Data = cloneBytes(ev.Data)
	if _, err := l.begin(); err != nil {
		return "", err
	}
	defer l.mu.Unlock()
	s := l.streamLocked(stream)
	s.next++
	s.entries = append(s.entries, localEntry{seq: s.next, ev: ev})
	// Trim in chunks of an eighth so trimming stays amortized O(1) per publish, the way
	// Redis's approximate MAXLEN trims whole macro nodes.
	if keep := int(l.cfg.StreamMaxLen); len(s.entries) > keep+keep/8 {
		s.entries = slices.Delete(s.entries, 0, len(s.entries)-keep)
	}
	close(s.notify)
	s.notify = make(chan struct{})
	return ev.ID, nil
}

// Read implements [EventStream].
func (l *Local) Read(ctx context.Context, a ReadArgs) ([]Delivery, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	if a.Max < 1 {
		a.Max = 1
	}
	var timer *time.Timer
	if a.Wait > 0 {
		timer = time.NewTimer(a.Wait)
		defer timer.Stop()
	}
	for {
		now, err := l.begin()
		if err != nil {
			return nil, err
		}
		s := l.streamLocked(a.Stream)
		g := s.groups[a.Group]
		if g == nil {
			g = &localGroup{pending: make(map[uint64]*localPending)}
			s.groups[a.Group] = g
		}
		out := l.claimLocked(s, g, a.Max, now)
		out = s.deliverNewLocked(g, out, a.Max, now)
		notify := s.notify
		l.mu.Unlock()
		if len(out) > 0 || timer == nil {
			return out, nil
		}
		select {
		case <-notify:
		case <-timer.C:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-l.closing:
			return nil, ErrClosed
		}
	}
}

// claimLocked redelivers, oldest first, up to limit pending entries idle for at least the
// visibility timeout, like XAUTOCLAIM. Pending entries whose event was trimmed are
// dropped.
func (l *Local) claimLocked(s *localStream, g *localGroup, limit int, now time.Time) []Delivery {
	var due []uint64
	for seq, p := range g.pending {
		if now.Sub(p.at) >= l.cfg.Visibility {
			due = append(due, seq)
		}
	}
	slices.Sort(due)
	var out []Delivery
	for _, seq := range due {
		if len(out) == limit {
			break
		}
		e, ok := s.find(seq)
		if !ok {
			delete(g.pending, seq)
			continue
		}
		p := g.pending[seq]
		p.at = now
		p.count++
		out = append(out, e.delivery(p.count))
	}
	return out
}

// deliverNewLocked appends to out the entries the group has never delivered, up to limit.
func (s *localStream) deliverNewLocked(g *localGroup, out []Delivery, limit int, now time.Time) []Delivery {
	i := sort.Search(len(s.entries), func(i int) bool { return s.entries[i].seq > g.last })
	for ; i < len(s.entries) && len(out) < limit; i++ {
		e := &s.entries[i]
		g.last = e.seq
		g.pending[e.seq] = &localPending{at: now, count: 1}
		out = append(out, e.delivery(1))
	}
	return out
}

func (s *localStream) find(seq uint64) (*localEntry, bool) {
	i, ok := slices.BinarySearchFunc(s.entries, seq, func(e localEntry, seq uint64) int {
		switch {
		case e.seq < seq:
			return -1
		case e.seq > seq:
			return 1
		}
		return 0
	})
	if !ok {
		return nil, false
	}
	return &s.entries[i], true
}

func (e *localEntry) delivery(count int) Delivery {
	ev := e.ev
	ev.Data = cloneBytes(ev.Data)
	return Delivery{Event: ev, Receipt: strconv.FormatUint(e.seq, 10), Deliveries: count}
}

// Ack implements [EventStream].
func (l *Local) Ack(_ context.Context, stream, group string, receipts ...string) error {
	if err := CheckKey("stream", stream, 0, false); err != nil {
		return err
	}
	if _, err := l.begin(); err != nil {
		return err
	}
	defer l.mu.Unlock()
	s := l.streams[stream]
	if s == nil || s.groups[group] == nil {
		return nil
	}
	g := s.groups[group]
	for _, r := range receipts {
		if seq, err := strconv.ParseUint(r, 10, 64); err == nil {
			delete(g.pending, seq)
		}
	}
	return nil
}

func (l *Local) streamLocked(name string) *localStream {
	s := l.streams[name]
	if s == nil {
		s = &localStream{groups: make(map[string]*localGroup), notify: make(chan struct{})}
		l.streams[name] = s
	}
	return s
}
