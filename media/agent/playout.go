package agent

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voiced/voiced/media"
)

// Playout states. The pacer's read moves playing -> reading -> playing
// around each frame it takes, so whoever pauses or stops a playout knows,
// once its transition succeeded, that no frame is in flight and the played
// count is final. A pause goes through fading: the pacer's next read
// plays the first fadeMS of what comes next, faded to silence, without
// consuming it, and leaves the playout paused; a resume fades the same
// samples back in, so nothing is lost or played twice at full level.
const (
	playPlaying int32 = iota
	playReading
	playPaused
	playStopped
	playFinished
	playFading
)

// fadeMS is the length of the fade to silence on a pause and back on a
// resume: short enough to stop within the frame, long enough not to click.
const fadeMS = 5

// playoutSeconds is the audio a playout buffers ahead of the pacer; the
// producer (TTS) waits when it is full.
const playoutSeconds = 2

// refillDivisor sets when a producer waiting on a full ring is woken: once
// a 1/refillDivisor of the ring (500 ms) is free, not after every frame.
// Woken per frame, the producer of a long response ran once per call per
// tick, a goroutine wake-up from the pacer each time, and it wrote 20 ms;
// now it wakes every 25 ticks and writes 500 ms, still 1.5 s ahead.
const refillDivisor = 4

// Playout is the agent's speech for one response on its way to the
// transport: a ring the response's speaker fills and the pacer drains one
// frame per tick. ReadFrame returns it so transports know which response
// and item a frame belongs to; its exported fields never change once
// ReadFrame has returned it.
type Playout struct {
	// ResponseID and ItemID name the response and the assistant message
	// item the audio belongs to; OutputIndex and ContentIndex place the
	// audio part within them.
	ResponseID, ItemID        string
	OutputIndex, ContentIndex int
	// Rate is the sample rate of the audio.
	Rate int

	ring  *media.Ring
	state atomic.Int32
	// played counts samples handed to the transport; written counts
	// samples the producer put in the ring.
	played, written atomic.Int64
	// firstAt is when the first frame left (Unix nanoseconds), 0 before;
	// lastAt when the latest one did, so a turn cut short ends where the
	// caller stopped hearing it, not where the engine decided.
	firstAt, lastAt atomic.Int64
	// done is set by the producer after its last write.
	done atomic.Bool
	// fadeIn is set by a resume: the pacer's next frame starts with a fade
	// from silence.
	fadeIn atomic.Bool
	// waiting is set by a producer blocked on a full ring; the pacer
	// signals space once a read leaves refill() free.
	waiting atomic.Bool
	space   chan struct{}

	mu   sync.Mutex
	segs []segment // guarded by mu: producer appends, the loop reads
}

// segment is a stretch of a playout's audio and the words it speaks.
// Hidden segments (placeholders) are audio that is not part of the answer.
type segment struct {
	text       string
	start, end int64 // samples
	hidden     bool
}

// ringPools holds playout rings per rate, as every playout of a rate
// needs the same capacity.
var ringPools [4]sync.Pool

func rateIndex(rate int) int {
	switch rate {
	case media.Rate8k:
		return 0
	case media.Rate16k:
		return 1
	case media.Rate24k:
		return 2
	}
	return 3
}

func newPlayout(rate int) *Playout {
	r, _ := ringPools[rateIndex(rate)].Get().(*media.Ring)
	if r == nil {
		r, _ = media.NewRing(rate * playoutSeconds) // capacity > 0: cannot fail
	}
	r.Reset()
	return &Playout{Rate: rate, ring: r, space: make(chan struct{}, 1)}
}

// release returns the ring to its pool. Only after the playout is stopped
// or finished and its producer has returned.
func (p *Playout) release() {
	if p.ring != nil {
		ringPools[rateIndex(p.Rate)].Put(p.ring)
		p.ring = nil
	}
}

// read is the pacer's side: it fills dst (one frame) and returns true, or
// returns false when the playout has nothing to play now (paused, stopped,
// underrun). finished reports that the producer is done and everything was
// played.
func (p *Playout) read(dst []int16, now time.Time) (ok, finished bool) {
	if !p.state.CompareAndSwap(playPlaying, playReading) {
		if p.state.CompareAndSwap(playFading, playReading) {
			ok = p.fadeOut(dst)
			p.state.Store(playPaused)
		}
		return ok, false
	}
	if p.ring.ReadFull(dst) {
		ok = true
		if p.fadeIn.Load() && p.fadeIn.CompareAndSwap(true, false) {
			ramp(dst[:min(len(dst), p.Rate*fadeMS/1000)], true)
		}
	} else if p.done.Load() {
		// The producer pads to whole frames, so what is left is less than a
		// frame only if it wrote an odd tail; play it padded.
		if n := p.ring.Read(dst); n > 0 {
			clear(dst[n:])
			ok = true
		}
	}
	if ok {
		ns := now.UnixNano()
		if p.played.Add(int64(len(dst))) == int64(len(dst)) {
			p.firstAt.Store(ns)
		}
		p.lastAt.Store(ns)
		if p.waiting.Load() && p.ring.Free() >= p.refill() && p.waiting.CompareAndSwap(true, false) {
			select {
			case p.space <- struct{}{}:
			default:
			}
		}
	}
	if !ok && p.done.Load() && p.ring.Len() == 0 {
		p.state.Store(playFinished)
		return false, true
	}
	p.state.Store(playPlaying)
	return ok, false
}

// fadeOut fills dst with the first fadeMS of the audio still to play,
// faded to silence, and silence after it, consuming nothing. It reports
// whether there was audio to fade. Pacer, in playReading.
func (p *Playout) fadeOut(dst []int16) bool {
	n := p.ring.Peek(dst[:min(len(dst), p.Rate*fadeMS/1000)])
	ramp(dst[:n], false)
	clear(dst[n:])
	return n > 0
}

// ramp fades pcm in place linearly, from silence (up) or to silence.
func ramp(pcm []int16, up bool) {
	n := len(pcm)
	for i := range pcm {
		k := n - i
		if up {
			k = i + 1
		}
		pcm[i] = int16(int(pcm[i]) * k / (n + 1))
	}
}

// hold moves the playout from playing to to (playFading for a pause, or
// playStopped), waiting out a read in flight, and reports whether it was
// playing (or paused, for a stop).
func (p *Playout) hold(to int32) bool {
	for {
		switch s := p.state.Load(); s {
		case playReading:
			runtime.Gosched()
		case playPlaying, playPaused, playFading:
			if s != playPlaying && to == playFading {
				return true // already pausing or paused
			}
			if p.state.CompareAndSwap(s, to) {
				return true
			}
		default:
			return false
		}
	}
}

// pause stops output within the pacer's next frame (a fadeMS fade to
// silence), keeping the rest for resume. Once it returned, the played
// count is final until a resume.
func (p *Playout) pause() bool { return p.hold(playFading) }

// stop ends output for good.
func (p *Playout) stop() bool { return p.hold(playStopped) }

// resume continues a paused playout where it paused, fading back in; a
// pause whose fade has not played yet is simply undone.
func (p *Playout) resume() bool {
	if p.state.CompareAndSwap(playFading, playPlaying) {
		return true
	}
	if p.state.Load() != playPaused {
		return false
	}
	// Set before the playout can play again; a resume that loses a race
	// to another resume or a stop leaves it set, harmlessly.
	p.fadeIn.Store(true)
	return p.state.CompareAndSwap(playPaused, playPlaying)
}

// paused reports whether the playout is paused or pausing.
func (p *Playout) paused() bool {
	s := p.state.Load()
	return s == playPaused || s == playFading
}

// Drained reports that the producer is done and every sample it wrote
// has been read: the frame ReadFrame just returned was the last. For the
// pacer's goroutine, which may then send what it holds at once.
func (p *Playout) Drained() bool { return p.done.Load() && p.played.Load() >= p.written.Load() }

// Played returns the samples handed to the transport so far.
func (p *Playout) Played() int64 { return p.played.Load() }

// PlayedMS returns Played in milliseconds.
func (p *Playout) PlayedMS() int64 { return p.played.Load() * 1000 / int64(p.Rate) }

// write is the producer's side: it appends pcm, waiting for room while the
// ring is full, until ctx is done.
func (p *Playout) write(ctx context.Context, pcm []int16) error {
	for len(pcm) > 0 {
		n := p.ring.Write(pcm)
		p.written.Add(int64(n))
		pcm = pcm[n:]
		if len(pcm) == 0 {
			return nil
		}
		// Publish the wait before looking at the room again, so that a
		// read that frees the refill room either sees waiting or is seen
		// here: no wake-up is lost.
		p.waiting.Store(true)
		if p.ring.Free() >= p.refill() {
			p.waiting.Store(false)
			continue
		}
		select {
		case <-p.space:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

// refill is the free room at which a waiting producer is woken.
func (p *Playout) refill() int { return p.ring.Cap() / refillDivisor }

// finish pads the written audio to a whole frame and marks the producer
// done.
func (p *Playout) finish(ctx context.Context) {
	frame := int64(media.SamplesPerFrame(p.Rate))
	if tail := p.written.Load() % frame; tail != 0 {
		pad := make([]int16, frame-tail)
		_ = p.write(ctx, pad)
	}
	p.done.Store(true)
}

// beginSegment records that the audio written from now on speaks text.
func (p *Playout) beginSegment(text string, hidden bool) {
	at := p.written.Load()
	p.mu.Lock()
	if n := len(p.segs); n > 0 && p.segs[n-1].end < 0 {
		p.segs[n-1].end = at
	}
	p.segs = append(p.segs, segment{text: text, start: at, end: -1, hidden: hidden})
	p.mu.Unlock()
}

// segments returns the segments with open ends closed at the written
// count.
func (p *Playout) segments() []segment {
	at := p.written.Load()
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]segment, len(p.segs))
	copy(out, p.segs)
	for i := range out {
		if out[i].end < 0 {
			out[i].end = at
		}
	}
	return out
}

// spokenText returns the words of segs heard within the first n samples:
// whole segments, and the share of words of a segment cut in the middle in
// proportion to the samples played.
func spokenText(segs []segment, n int64) string {
	var b strings.Builder
	for _, s := range segs {
		if s.hidden || s.start >= n {
			continue
		}
		text := s.text
		if s.end > n && s.end > s.start {
			words := strings.Fields(text)
			k := int(int64(len(words)) * (n - s.start) / (s.end - s.start))
			text = strings.Join(words[:k], " ")
		}
		if text == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strings.TrimSpace(text))
	}
	return b.String()
}
