package turn

import "math"

// Contour is how the caller's voice ends the last voiced stretch of a
// turn: the intonation half of the semantic end-of-turn model.
type Contour uint8

const (
	// ContourUnknown is the zero value: too little voiced speech to tell.
	ContourUnknown Contour = iota
	// ContourFall: the pitch ends low in the speaker's range, as a
	// finished statement does (final lowering).
	ContourFall
	// ContourHold: the pitch ends level or high, as a speaker holding the
	// floor mid-sentence does ("I would like to book a table, ... for
	// Friday"), and as a question does.
	ContourHold
)

// String returns the contour's name.
func (c Contour) String() string {
	switch c {
	case ContourFall:
		return "fall"
	case ContourHold:
		return "hold"
	}
	return "unknown"
}

// The pitch tracker works at 8 kHz on 20 ms hops: normalized
// autocorrelation of a 20 ms stretch against itself 2.5-16.6 ms later,
// that is 60-400 Hz, every male and female voice.
const (
	pitchRate  = 8000
	pitchHop   = pitchRate / 50 // 20 ms
	pitchLen   = pitchHop       // correlated stretch
	pitchMinT  = 20             // 400 Hz
	pitchMaxT  = 133            // 60 Hz
	pitchWin   = pitchLen + pitchMaxT + 1
	pitchBins  = 80 // half-semitones above 55 Hz: up to 55 Hz × 2^(40/12), 551 Hz
	pitchTail  = 4  // voiced frames that make the ending
	pitchRun   = 3  // voiced frames in a row before they can end it
	pitchVoice = 0.6
	// pitchMinFrames is the voiced speech (in frames) the contour needs
	// before it tells: 200 ms.
	pitchMinFrames = 10
	// fallST is how far (in semitones) below the turn's median pitch the
	// ending must be to count as a fall. espeak-ng's statements mostly
	// end 2-6 semitones under the median of their voiced frames, its
	// clauses ending on a comma within a semitone of it or dipping and
	// rising again (TestIntonation).
	fallST = 1.5
	// riseST is how far the newest voiced frame must rise over the lowest
	// of the ending for a hold, whatever its level: espeak-ng's comma
	// clauses that dip low rise 0.6-4.2 semitones off the dip, its
	// statements at most 0.16 (TestIntonation).
	riseST = 0.4
	// pitchJump is how far from the turn's median a frame is taken for an
	// octave error.
	pitchJump = 8
)

// Intonation follows the pitch of one turn's voiced frames and tells how
// the last of them end (Contour). Write gives it the turn's 16 kHz audio as
// it arrives; it keeps 37 ms of audio and a histogram of the turn's pitch,
// allocates nothing, and costs about 11 µs per 20 ms of audio
// (BenchmarkIntonation), run off the media path by the speech-to-text
// worker. The zero value is ready; Reset starts a new turn.
type Intonation struct {
	x    [pitchWin]float32 // the latest samples at 8 kHz, oldest first
	fill int               // samples in x
	odd  bool              // a 16 kHz sample is waiting for its pair
	half float32           // that sample

	peak   float32          // the turn's loudest analysed stretch (energy)
	hist   [pitchBins]int32 // voiced frames per half-semitone
	voiced int32
	tail   [pitchTail]float32 // semitones of the last voiced frames, a ring
	ntail  int
	run    [pitchRun - 1]float32 // a voiced run too short to count yet
	nrun   int                   // frames in the current voiced run, up to pitchRun
}

// Reset forgets the turn.
func (t *Intonation) Reset() { *t = Intonation{} }

// Write analyses the next 16 kHz samples of the turn.
func (t *Intonation) Write(pcm []int16) {
	for _, s := range pcm {
		if !t.odd {
			t.half, t.odd = float32(s), true
			continue
		}
		t.odd = false
		// Averaging pairs is a gentle low-pass: enough before a pitch
		// search, which needs no more than 400 Hz.
		t.x[t.fill] = (t.half + float32(s)) / 2
		t.fill++
		if t.fill == pitchWin {
			t.analyse()
			t.fill = copy(t.x[:], t.x[pitchHop:])
		}
	}
}

// analyse counts the newest stretch's pitch, when it is voiced. A voiced
// run shorter than pitchRun frames (a creak or a consonant after the last
// vowel) is counted in the range but is not an ending: until its third
// frame it waits in run.
func (t *Intonation) analyse() {
	st, ok := t.pitch()
	if !ok {
		t.nrun = 0
		return
	}
	bin := int(2 * st)
	if bin < 0 || bin >= pitchBins {
		t.nrun = 0
		return
	}
	// A frame far off the voice's range so far is an octave error (or
	// two): counted in the range, but not an ending.
	var octave bool
	if t.voiced >= pitchMinFrames {
		m := t.median()
		octave = st > m+pitchJump || st < m-pitchJump
	}
	t.hist[bin]++
	t.voiced++
	if octave {
		return
	}
	if t.nrun < pitchRun-1 {
		t.run[t.nrun] = st
		t.nrun++
		return
	}
	if t.nrun == pitchRun-1 {
		for _, x := range t.run[:t.nrun] {
			t.push(x)
		}
		t.nrun++
	}
	t.push(st)
}

func (t *Intonation) push(st float32) {
	t.tail[t.ntail%pitchTail] = st
	t.ntail++
}

// pitch estimates the pitch of the newest stretch in semitones above 55
// Hz; ok is false when it is not voiced.
func (t *Intonation) pitch() (st float32, ok bool) {
	x := t.x[:]
	var e1 float64
	for _, v := range x[:pitchLen] {
		e1 += float64(v) * float64(v)
	}
	t.peak = max(t.peak, float32(e1))
	// Below -55 dBFS, or 20 dB under the turn's loudest: not the voice.
	if e1 < pitchLen*58*58 || float32(e1) < t.peak/100 {
		return 0, false
	}
	var e2 float64
	for _, v := range x[pitchMinT : pitchMinT+pitchLen] {
		e2 += float64(v) * float64(v)
	}
	var r [pitchMaxT + 2]float64
	best, bestT := 0.0, 0
	for lag := pitchMinT; lag <= pitchMaxT; lag++ {
		var c float64
		y := x[lag : lag+pitchLen]
		for i, v := range x[:pitchLen] {
			c += float64(v) * float64(y[i])
		}
		if e2 > 0 {
			r[lag] = c / math.Sqrt(e1*e2)
		}
		if r[lag] > best {
			best, bestT = r[lag], lag
		}
		a, b := float64(x[lag]), float64(x[lag+pitchLen])
		e2 += b*b - a*a
	}
	if best < pitchVoice {
		return 0, false
	}
	// The shortest period nearly as good as the best: a voice correlates
	// as well at two periods as at one, and the pitch is the one.
	lag := bestT
	for l := pitchMinT + 1; l < bestT; l++ {
		if r[l] >= 0.9*best && r[l] >= r[l-1] && r[l] >= r[l+1] {
			lag = l
			break
		}
	}
	// A parabola through the peak and its neighbours refines the period.
	period := float64(lag)
	if lag > pitchMinT && lag < pitchMaxT {
		a, b, c := r[lag-1], r[lag], r[lag+1]
		if d := a - 2*b + c; d < 0 {
			period += 0.5 * (a - c) / d
		}
	}
	return float32(12 * math.Log2(pitchRate/period/55)), true
}

// median is the turn's median pitch in semitones above 55 Hz, to the
// half-semitone.
func (t *Intonation) median() float32 {
	var seen int32
	for b, n := range t.hist {
		seen += n
		if 2*seen >= t.voiced {
			return (float32(b) + 0.5) / 2
		}
	}
	return 0
}

// Contour tells how the turn's voiced speech so far ends: a fall when the
// median pitch of its last four voiced frames is at least 1.5 semitones
// under the median of all of them and the newest is not rising off the
// lowest, else a hold; ContourUnknown before 200 ms of voiced speech.
func (t *Intonation) Contour() Contour {
	if t.voiced < pitchMinFrames || t.ntail < pitchTail {
		return ContourUnknown
	}
	median := t.median()
	// The ending in time order, newest last.
	var e [pitchTail]float32
	for i := range e {
		e[i] = t.tail[(t.ntail+i)%pitchTail]
	}
	newest, low := e[pitchTail-1], e[0]
	for _, x := range e[1:] {
		low = min(low, x)
	}
	s := e
	for i := 1; i < pitchTail; i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	level := (s[pitchTail/2-1] + s[pitchTail/2]) / 2
	if level <= median-fallST && newest-low < riseST {
		return ContourFall
	}
	return ContourHold
}
