package call

import (
	"sync"
	"sync/atomic"

	"github.com/voiced/voiced/media"
)

// Tap fans a live call's mixed audio (caller plus agent) out to its
// listeners, for live listen (issue 26 item 6; the socket is listen.go).
// The call's media goroutine feeds it each tick: Agent with the agent's
// frame and Caller with the caller's, which mixes the caller's frame with
// the last agent frame and hands the mix to every listener (a phone
// call's pacer worker calls Agent first; a browser call's session loop
// Caller first, so its agent frame is the previous tick's; a realtime
// session's pacer tick calls both, agent.AudioTap). A listener
// that falls behind loses frames (its channel is full): the call never
// waits for one. With no listener a tick costs one atomic load.
type Tap struct {
	n  atomic.Int32
	mu sync.Mutex
	ls map[*Listener]struct{}
	// agent is the agent's frame of this tick; pacer worker only.
	agent   []int16
	agentOK bool
	closed  bool
}

// Listener receives a call's mixed frames on C until the call ends (C is
// then closed) or it is stopped.
type Listener struct {
	C       chan []int16
	dropped atomic.Int64
}

// Dropped counts the frames the listener missed for being slow.
func (l *Listener) Dropped() int64 { return l.dropped.Load() }

// Listen adds a listener whose channel holds up to buf frames (buf
// frames of 20 ms: how far it may fall behind before losing audio). It
// returns nil once the tap is closed (the call has ended).
func (t *Tap) Listen(buf int) *Listener {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	if t.ls == nil {
		t.ls = make(map[*Listener]struct{})
	}
	l := &Listener{C: make(chan []int16, max(buf, 1))}
	t.ls[l] = struct{}{}
	t.n.Add(1)
	return l
}

// Stop removes l and closes its channel; stopping twice is harmless.
func (t *Tap) Stop(l *Listener) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.ls[l]; ok {
		delete(t.ls, l)
		t.n.Add(-1)
		close(l.C)
	}
}

// Close ends every listener (the call has ended) and refuses new ones.
func (t *Tap) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for l := range t.ls {
		close(l.C)
	}
	t.ls = nil
	t.n.Store(0)
}

// Listening reports whether anyone listens (agent.AudioTap: a realtime
// session feeds the tap only then).
func (t *Tap) Listening() bool { return t.n.Load() > 0 }

// Agent keeps the agent's frame of this tick (ok false: it is silent);
// the call's media goroutine.
func (t *Tap) Agent(pcm []int16, ok bool) {
	if t.n.Load() == 0 {
		return
	}
	t.agent = append(t.agent[:0], pcm...)
	t.agentOK = ok
}

// Caller mixes the caller's frame with the agent's of this tick and
// hands the mix to every listener, dropping it for those whose channel is
// full; the call's media goroutine.
func (t *Tap) Caller(pcm []int16) {
	if t.n.Load() == 0 {
		return
	}
	mix := make([]int16, len(pcm)) // listeners share it read-only
	copy(mix, pcm)
	if t.agentOK && len(t.agent) == len(pcm) {
		media.MixInto(mix, t.agent)
	}
	t.agentOK = false
	t.mu.Lock()
	for l := range t.ls {
		select {
		case l.C <- mix:
		default:
			l.dropped.Add(1)
		}
	}
	t.mu.Unlock()
}
