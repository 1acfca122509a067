package agent

import (
	"unsafe"

	"github.com/voiced/voiced/media/prefetch"
)

// headBytes is how much of a buffer's next stretch a hot list names: the
// processor's own prefetcher follows a sequential copy once it has begun.
const headBytes = 128

// InputLines names what the session's next WriteFrame touches, for the
// node's pacer to fetch ahead (media/prefetch): an rtp.HotLister. A Sink
// that hands the session the caller's frames lists it (rtp.Lines), so
// the layer above media names the agent's memory without knowing it.
type InputLines struct{ s *Session }

// OutputLines is InputLines for the session's next ReadFrame.
type OutputLines struct{ s *Session }

// InputLines returns the session's InputLines.
func (s *Session) InputLines() InputLines { return InputLines{s} }

// OutputLines returns the session's OutputLines.
func (s *Session) OutputLines() OutputLines { return OutputLines{s} }

// AddHot adds to l what the next WriteFrame touches: the session's input
// state, the end of the input buffer where the frame goes, the speech
// processor and turn detector, and the recorder where the caller's next
// frame goes. Input goroutine, after a WriteFrame.
func (h InputLines) AddHot(l *prefetch.List) {
	s := h.s
	if !prefetch.Enabled || s == nil {
		return
	}
	in := &s.in
	l.AddSpan(prefetch.Addr(in), int(unsafe.Sizeof(*in)))
	l.Add(prefetch.Addr(&s.closed))
	if n := len(in.buf); n < cap(in.buf) {
		l.AddSpan(prefetch.Addr(&in.buf[:n+1][n]), headBytes)
	}
	if in.dsp != nil {
		in.dsp.AddHot(l)
	}
	if in.det != nil {
		l.AddSpan(prefetch.Addr(in.det), int(unsafe.Sizeof(*in.det)))
	}
	if s.rec != nil {
		s.rec.addHot(l, recCaller)
	}
}

// AddHot adds to l what the next ReadFrame touches: the playout, its
// ring where the next frame is read, and the recorder where the agent's
// next frame goes. Pacer goroutine, after a ReadFrame.
func (h OutputLines) AddHot(l *prefetch.List) {
	s := h.s
	if !prefetch.Enabled || s == nil {
		return
	}
	l.Add(prefetch.Addr(&s.play))
	if p := s.play.Load(); p != nil {
		l.AddSpan(prefetch.Addr(&p.ring), int(unsafe.Sizeof(*p)-unsafe.Offsetof(p.ring)))
		p.ring.AddHot(l, headBytes)
	}
	if s.rec != nil {
		s.rec.addHot(l, recAgent)
	}
}

// addHot adds the recorder and where side's next frame goes. Under no
// lock: the fields it reads are its caller's side's or change once a
// chunk.
func (r *recorder) addHot(l *prefetch.List, side int) {
	l.AddSpan(prefetch.Addr(&r.mu), int(unsafe.Offsetof(r.ready)-unsafe.Offsetof(r.mu)))
	i := int(r.pos[side] - r.base)
	c := r.cur
	if i >= r.perChunk {
		c, i = r.next, i-r.perChunk
	}
	if at := i * r.pair; at < len(c) {
		l.AddSpan(prefetch.Addr(&c[at]), min(r.pair, len(c)-at))
	}
}
