package audio

import "time"

// Threshold is the level (about -30 dBFS) a sample must reach to count as
// speech. The prompt's speech peaks at -6 dBFS; comfort noise and codec
// noise stay far below.
const Threshold = 1000

// MinSilence is the quiet that must come before an onset. It is longer
// than the pauses inside the prompt (commas), so one prompt gives one
// onset.
const MinSilence = 400 * time.Millisecond

// Onset finds speech onsets in a stream of PCM at one rate. It belongs to
// the goroutine that feeds it and allocates nothing.
type Onset struct {
	need  int // quiet samples needed before an onset
	quiet int // quiet samples so far
}

// NewOnset returns a detector for audio at rate Hz; the stream starts as
// if preceded by silence.
func NewOnset(rate int) *Onset {
	need := int(MinSilence * time.Duration(rate) / time.Second)
	return &Onset{need: need, quiet: need}
}

// Feed scans one chunk and returns the index of the first onset in it,
// or -1. A chunk holds at most one onset (chunks are 20 ms, far shorter
// than MinSilence).
func (o *Onset) Feed(pcm []int16) int {
	at := -1
	for i, v := range pcm {
		if o.feedSample(v) && at < 0 {
			at = i
		}
	}
	return at
}

func (o *Onset) feedSample(v int16) bool {
	if abs(v) < Threshold {
		o.quiet++
		return false
	}
	onset := o.quiet >= o.need
	o.quiet = 0
	return onset
}
