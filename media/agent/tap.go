package agent

import (
	"errors"
	"fmt"

	"github.com/voiced/voiced/codecs/resample"
	"github.com/voiced/voiced/media"
)

// AudioTap hears both sides of a running session (live listen: call.Tap
// implements it). While Listening reports true, each pacer tick
// (ReadFrame) calls Agent with the agent's frame of the tick (ok false: the
// agent is silent) and then Caller with the caller's frame for the tick
// (silence when none arrived), both 20 ms at TapRate(OutputRate), both on
// the pacer goroutine; the frames are only read during the call.
// Listening is called from the pacer and the input goroutine and must be
// cheap (an atomic load): with nobody listening the session does nothing
// more for the tap.
type AudioTap interface {
	Listening() bool
	Agent(pcm []int16, ok bool)
	Caller(pcm []int16)
}

// tapBacklog is how many caller frames (500 ms, the recorder's caller
// wait) may wait for the pacer's ticks; older ones are dropped from what
// the tap hears (not from the session). tapRing is the ring's room.
const (
	tapBacklog = 25
	tapRing    = 2 * tapBacklog
)

// TapRate is the rate of an AudioTap's frames for a session whose output
// is at outputRate: 8 kHz for an 8 kHz (G.711) output, which is all the
// agent's side has, else 16 kHz, the engine's input rate.
func TapRate(outputRate int) int {
	if outputRate == media.Rate8k {
		return media.Rate8k
	}
	return media.Rate16k
}

// tapFeed brings a session's two sides to its tap at one rate, on one
// clock. The clock is the pacer: the caller's frames (which a realtime
// client may append faster than real time, in bursts) go into a ring on
// the input side, and each tick takes one of them out next to the agent's
// frame, or silence when none is there. A backlog beyond tapBacklog
// frames is dropped, oldest first, so the listener stays within half a
// second of the call rather than drifting behind a client that sends
// ahead. Nothing is allocated per frame.
type tapFeed struct {
	t  AudioTap
	fn int // samples per frame at the tap's rate
	// ars brings agent frames to the tap's rate (pacer side), crs caller
	// frames (input side); nil where the rate is the tap's already.
	ars, crs *resample.Resampler
	a        []int16     // agent frame at the tap's rate (pacer side)
	cIn      []int16     // caller frame at the tap's rate (input side)
	cOut     []int16     // caller frame of the tick (pacer side)
	ring     *media.Ring // caller audio, input side to pacer
}

// SetAudioTap makes t hear the session from the next tick on. It may be
// called once, before or while the pacer runs (it is how call/ attaches
// a live-listen tap to a realtime session). With no tap, or a tap nobody
// listens to, ReadFrame and WriteFrame pay one atomic load (and a
// Listening call) for it.
func (s *Session) SetAudioTap(t AudioTap) error {
	if t == nil {
		return fmt.Errorf("agent: audio tap: nil: %w", ErrConfig)
	}
	rate := TapRate(s.cfg.OutputRate)
	f := &tapFeed{t: t, fn: media.SamplesPerFrame(rate)}
	f.a, f.cIn, f.cOut = make([]int16, f.fn), make([]int16, f.fn), make([]int16, f.fn)
	f.ring, _ = media.NewRing(tapRing * f.fn)
	var err error
	if s.cfg.OutputRate != rate {
		f.ars, err = resample.New(s.cfg.OutputRate, rate, resample.QualityLow)
	}
	if err == nil && s.cfg.InputRate != rate {
		f.crs, err = resample.New(s.cfg.InputRate, rate, resample.QualityLow)
	}
	if err != nil {
		f.close()
		return fmt.Errorf("agent: audio tap resampler: %w", err)
	}
	if !s.tap.CompareAndSwap(nil, f) {
		f.close()
		return errors.New("agent: audio tap set already")
	}
	return nil
}

// tick hands the tap the agent's frame of this tick and the caller's
// frame it takes; pacer side.
func (f *tapFeed) tick(agent []int16, ok bool) {
	if !f.t.Listening() {
		if n := f.ring.Len(); n > 0 {
			f.ring.Discard(n) // nobody heard it; the next listener starts now
		}
		return
	}
	if ok && f.ars != nil {
		if _, err := toFileRate(f.ars, f.a, agent); err != nil {
			ok = false
		}
		agent = f.a
	}
	f.t.Agent(agent, ok)
	if n, keep := f.ring.Len(), tapBacklog*f.fn; n > keep {
		f.ring.Discard(n - keep - n%f.fn)
	}
	if !f.ring.ReadFull(f.cOut) {
		clear(f.cOut)
	}
	f.t.Caller(f.cOut)
}

// caller queues one caller frame for the pacer's next tick: pcm at the
// input rate, or decoded when it is at the tap's rate; input side.
func (f *tapFeed) caller(pcm, decoded []int16) {
	if !f.t.Listening() {
		return
	}
	frame := pcm
	switch {
	case f.crs == nil:
	case len(decoded) == f.fn:
		frame = decoded
	default:
		var err error
		if frame, err = toFileRate(f.crs, f.cIn, pcm); err != nil {
			return
		}
	}
	if f.ring.Free() >= len(frame) {
		f.ring.Write(frame)
	}
}

func (f *tapFeed) close() {
	if f.ars != nil {
		f.ars.Close()
	}
	if f.crs != nil {
		f.crs.Close()
	}
}
