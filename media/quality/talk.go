package quality

import (
	"time"

	"github.com/voiced/voiced/media"
)

// SpeakingRMS is the frame RMS (about -40 dBFS) above which a caller's
// frame counts as speech for dead air and talk-over.
const SpeakingRMS = 320

// DefaultDeadAir is the silence on both sides after which Talk counts
// dead air.
const DefaultDeadAir = 3 * time.Second

// Talk accumulates dead air and talk-over from per-frame voice activity of
// both sides. Dead air is a stretch in which neither side speaks for longer
// than Threshold; the whole stretch counts once it passes the threshold
// (ordinary pauses between turns do not). Talk-over is the time both speak
// at once. A Talk belongs to the goroutine that feeds it frames; it adds to
// the shared Metrics atomically.
type Talk struct {
	// Threshold is the silence that makes dead air; 0 means DefaultDeadAir.
	Threshold time.Duration
	// Metrics receives the totals (DeadAir, TalkOver).
	Metrics *Metrics

	silent  time.Duration // current stretch of silence on both sides
	counted bool          // the current stretch already passed the threshold
	events  int
}

// ObserveFrame records one frame of the caller's audio (speech when its
// RMS reaches SpeakingRMS) and whether the agent played audio in it.
func (t *Talk) ObserveFrame(caller []int16, agent bool) {
	t.Observe(media.RMS(caller) >= SpeakingRMS, agent, media.FrameDuration)
}

// Observe records d of audio in which the caller and the agent did or did
// not speak.
func (t *Talk) Observe(caller, agent bool, d time.Duration) {
	th := t.Threshold
	if th <= 0 {
		th = DefaultDeadAir
	}
	if caller && agent && t.Metrics != nil {
		t.Metrics.TalkOver.Add(int64(d))
	}
	if caller || agent {
		t.silent, t.counted = 0, false
		return
	}
	t.silent += d
	switch {
	case t.counted:
		t.add(d)
	case t.silent > th:
		t.counted = true
		t.events++
		t.add(t.silent)
	}
}

// Events returns how many stretches of dead air there were.
func (t *Talk) Events() int { return t.events }

func (t *Talk) add(d time.Duration) {
	if t.Metrics != nil {
		t.Metrics.DeadAir.Add(int64(d))
	}
}
