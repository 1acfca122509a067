package rtp

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/voiced/voiced/media/prefetch"
)

// hotSink is a Sink and hotSource a Source that list a marker of their
// own as hot (HotLister).
type hotSink struct{ marker [64]byte }

func (k *hotSink) WriteFrame([]int16) error     { return nil }
func (k *hotSink) AddHot(l *prefetch.List)      { l.Add(prefetch.Addr(&k.marker)) }
func (g *hotSource) AddHot(l *prefetch.List)    { l.Add(prefetch.Addr(&g.marker)) }
func (g *hotSource) ReadFrame(dst []int16) bool { return g.tableSource.ReadFrame(dst) }

type hotSource struct {
	tableSource
	marker [64]byte
}

// TestHotLists: after its PostTick a session lists its socket, receive
// codec and jitter chain, the sink's box and what the sink lists; after
// its Tick the encoder, the source's frame and what the source lists.
// The pacer's two stages run on any session, one without media included.
func TestHotLists(t *testing.T) {
	r := newRig(t, codecPCMU, Config{})
	s := r.s
	k := &hotSink{}
	s.SetSink(k)
	src := &hotSource{tableSource: newTableSource(16000)}
	require.NoError(t, s.SetSource(src, 16000))
	for range 3 {
		r.receive()
		r.send()
		s.postTick(r.now)
	}
	rx, tx := &s.hot.rx, &s.hot.tx
	if !prefetch.Enabled {
		require.Empty(t, rx.Addrs())
		require.Empty(t, tx.Addrs())
	} else {
		for name, a := range map[string]uintptr{
			"socket":      prefetch.Addr(s.sock),
			"codec":       prefetch.Addr(s.rxc),
			"playout":     prefetch.Addr(s.rxc.play),
			"sink box":    prefetch.Addr(s.sink.Load()),
			"sink frame":  prefetch.SliceAddr(s.sink.Load().pcm),
			"sink's list": prefetch.Addr(&k.marker),
		} {
			require.True(t, rx.Has(a), "rx: %s not listed", name)
		}
		for name, a := range map[string]uintptr{
			"encoder":       prefetch.Addr(s.tx.enc),
			"source frame":  prefetch.SliceAddr(s.tx.srcPCM),
			"source's list": prefetch.Addr(&src.marker),
		} {
			require.True(t, tx.Has(a), "tx: %s not listed", name)
		}
	}
	bare := newSession(t, Config{Local: localhost}, newPacer(t), newPorts(t))
	for _, x := range []*Session{s, bare} {
		for stage := range 2 {
			ticker{x}.Prefetch(stage, false)
			ticker{x}.Prefetch(stage, true)
		}
	}
}

// objectSink is a Sink of a layer above media: a HotObject naming its
// state (four lines) and, after it, another HotLister's.
type objectSink struct {
	state *[256]byte
	then  HotLister
}

func (k objectSink) WriteFrame([]int16) error { return nil }
func (k objectSink) HotLines() HotLister      { return Lines(k.state, k.then) }

// TestHotObject: a Sink that is a HotObject is asked for its lines once,
// when it is set, and what they name is listed after every frame: each
// line of its object, the lister itself, and what it lists next.
func TestHotObject(t *testing.T) {
	r := newRig(t, codecPCMU, Config{})
	s := r.s
	state, inner := new([256]byte), &hotSink{}
	s.SetSink(objectSink{state: state, then: inner})
	hot := s.sink.Load().hot
	require.NotNil(t, hot)
	for range 3 {
		r.receive()
		s.postTick(r.now)
	}
	require.Same(t, hot, s.sink.Load().hot, "asked once")
	rx := &s.hot.rx
	if !prefetch.Enabled {
		require.Empty(t, rx.Addrs())
		return
	}
	for i := 0; i < len(state); i += 64 {
		require.True(t, rx.Has(prefetch.Addr(&state[i])), "line at %d of the object not listed", i)
	}
	require.True(t, rx.Has(prefetch.Addr(hot.(*objectLines))), "the lister")
	require.True(t, rx.Has(prefetch.Addr(&inner.marker)), "what it lists next")
	require.Nil(t, hotOf(&nopSink{}), "a Sink that names nothing")
}
