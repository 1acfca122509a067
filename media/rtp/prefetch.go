package rtp

import (
	"unsafe"

	"github.com/voiced/voiced/media/pace"
	"github.com/voiced/voiced/media/prefetch"
)

// HotLister is a Sink or Source that can say what its next call will
// touch (media/prefetch), for the session to have it fetched ahead of its
// next tick: AddHot adds those addresses to l. The session calls it on
// the pacer worker right after the frame of this tick, where the
// Sink's WriteFrame and the Source's ReadFrame run.
type HotLister interface {
	AddHot(l *prefetch.List)
}

// HotObject is a Sink or Source of a layer above media (the live call)
// that names the memory its frames touch without building a
// prefetch.List: the session asks it once, when it is set, and calls the
// HotLister it returns after every frame, as it calls the AddHot of a
// Sink or Source that is a HotLister. Lines makes one.
type HotObject interface {
	HotLines() HotLister
}

// Lines returns a HotLister that lists every line of *p, then what then
// lists (then may be nil, or an agent's InputLines or OutputLines), for a
// HotObject's HotLines: the object of the call layer whose fields a
// Sink's or Source's frame reads. It allocates; a session calls it once
// per SetSink or SetSource.
func Lines[T any](p *T, then HotLister) HotLister {
	return &objectLines{p: unsafe.Pointer(p), n: int(unsafe.Sizeof(*p)), then: then}
}

// objectLines is Lines' HotLister.
type objectLines struct {
	p    unsafe.Pointer // a pointer, not an address: it keeps *p alive
	n    int
	then HotLister
}

// AddHot lists the objectLines too: the session reads it after each
// frame, by when a tick has taken it out of the cache.
func (o *objectLines) AddHot(l *prefetch.List) {
	if !prefetch.Enabled {
		return
	}
	l.Add(prefetch.Addr(o))
	l.AddSpan(uintptr(o.p), o.n)
	if o.then != nil {
		o.then.AddHot(l)
	}
}

// hotOf is what the session lists for a Sink or Source v: v itself when
// it is a HotLister, what it names when it is a HotObject, else nil.
func hotOf(v any) HotLister {
	switch h := v.(type) {
	case HotLister:
		return h
	case HotObject:
		return h.HotLines()
	}
	return nil
}

// hot is what a session prefetches ahead of its next Tick (tx) and
// PostTick (rx): gathered at the end of each, fetched by the pacer while
// it runs the stream before (pace.Prefetcher).
type hot struct {
	rx, tx prefetch.List
}

var _ pace.Prefetcher = ticker{}

// Prefetch implements pace.Prefetcher: stage 0 the session's own lines
// and its list of the rest, stage 1 the list (see hot).
func (t ticker) Prefetch(stage int, post bool) { t.s.prefetch(stage, post) }

// prefetch is the session's pace.Prefetcher: at stage 0 the lines of the
// Session that the next PostTick (post) or Tick reads and the first lines
// of its list, at stage 1 every address of the list. Pacer worker.
func (s *Session) prefetch(stage int, post bool) {
	if !prefetch.Enabled {
		return
	}
	base := uintptr(unsafe.Pointer(s))
	l := &s.hot.tx
	if post {
		l = &s.hot.rx
	}
	if stage == 0 {
		if post {
			prefetch.Range(base+unsafe.Offsetof(s.sock), base+unsafe.Offsetof(s.remote))
			prefetch.Range(base+unsafe.Offsetof(s.due), base+unsafe.Offsetof(s.timedOut)+1)
		} else {
			prefetch.Range(base+unsafe.Offsetof(s.m), base+unsafe.Offsetof(s.mu))
			prefetch.Range(base+unsafe.Offsetof(s.txMu), base+unsafe.Offsetof(s.tx)+unsafe.Offsetof(s.tx.dtmf)+64)
			prefetch.Range(base+unsafe.Offsetof(s.tx)+unsafe.Offsetof(s.tx.batch), base+unsafe.Offsetof(s.tx)+unsafe.Offsetof(s.tx.buf))
			prefetch.Range(base+unsafe.Offsetof(s.lastRecv), base+unsafe.Offsetof(s.timedOut)+1)
		}
		// The list's first lines: a call's list is a few dozen
		// addresses, the rest comes in at stage 1 if it is longer.
		a := prefetch.Addr(l)
		prefetch.Range(a, a+min(unsafe.Sizeof(*l), 5*64))
		return
	}
	l.Fetch()
}

// gatherRx starts the list of what the next PostTick touches beyond the
// session: the socket and the receive codec's chain. Under mu, after the
// tick's frame was read.
func (s *Session) gatherRx(rc *rxCodec) {
	l := &s.hot.rx
	l.Reset()
	l.Add(prefetch.Addr(s.sock))
	l.AddSpan(prefetch.Addr(rc), int(unsafe.Sizeof(*rc)))
	rc.play.AddHot(l)
}

// gatherSink adds the sink's box and buffer to that list, and the sink's
// own (HotLister). Pacer worker, after the sink's frame.
func (s *Session) gatherSink(b *sinkBox) {
	l := &s.hot.rx
	l.Add(prefetch.Addr(b))
	l.AddSpan(prefetch.SliceAddr(b.pcm), 2*len(b.pcm))
	if b.hot != nil {
		b.hot.AddHot(l)
	}
}

// gatherTx lists what the next Tick touches beyond the session: the
// encoder, the source's buffer and the source's own (HotLister). Under
// txMu, after the tick's frame.
func (s *Session) gatherTx() {
	t := &s.tx
	l := &s.hot.tx
	l.Reset()
	l.Add(prefetch.Addr(t.enc))
	l.AddSpan(prefetch.SliceAddr(t.srcPCM), 2*len(t.srcPCM))
	if t.srcHot != nil {
		t.srcHot.AddHot(l)
	}
}
