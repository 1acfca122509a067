package agent

import (
	"math"
	"time"
)

// The echo path: what of the caller's audio the agent's own playout
// explains. The agent knows exactly what it played and in which caller
// frame (the pacer's frame goes into Session.far and the input side takes
// one per caller frame), so the input side compares the two:
//
//   - Delay: the caller's level envelope (10 ms blocks, in dB) is
//     correlated with the played reference's at every lag from 0 to
//     echoLags-1 blocks; the best lag, once it stands out, is the echo
//     path's delay (jitter buffer, network, the far end's playout and its
//     microphone). It drives the echo canceller's delay (Processor.
//     SetEchoDelay), whose 128 ms filter covers echoes from about 20 ms
//     before to 100 ms after it: a fixed hint misses echoes outside.
//   - Gate: a caller frame whose energy is no more than echoMargin above
//     what the playout at that delay predicts (the reference's energy
//     there times the echo's measured gain) is explained by the agent's
//     own audio, and turn detection hears no speech in it. Before the
//     delay is known every lag up to 350 ms counts. With the agent silent
//     for longer than that nothing is predicted and nothing is gated, so
//     turns that start while the agent is quiet are untouched.
//
// Residual echo the canceller left (before it converged, or when the
// delay moved) therefore cannot pass for the caller; a caller who speaks
// over the agent at about its level or louder still barges in, as the
// echo comes back well under the playout (an echo as loud as what was
// played would be gated unless the caller is echoMargin louder).

const (
	// echoLags is the delays considered, in 10 ms blocks: 0-350 ms.
	echoLags = 36
	// echoHist is the reference history kept, in blocks (a power of two,
	// more than echoLags plus the gate's spread).
	echoHist = 64
	// echoAlpha is the forgetting factor of the delay correlation per
	// active block: a time constant of 1.28 s of agent audio.
	echoAlpha = 1.0 / 128
	// echoMinBlocks is the agent audio the correlation needs before its
	// delay is trusted (0.5 s).
	echoMinBlocks = 50
	// echoMinCorr is the correlation the best lag needs to be trusted, and
	// echoSwitch how much better another lag must get to replace it.
	echoMinCorr = 0.5
	echoSwitch  = 0.05
	// echoActiveDB is the block level (dB of mean square in int16 units)
	// above which the reference counts as playing: about -60 dBFS.
	echoActiveDB = 30
	// echoMargin is how far (dB) above the predicted echo a frame must be
	// to be the caller's, and echoGainInit the echo's gain before it was
	// measured (as loud as played: every echo is under it).
	echoMargin   = 6
	echoGainInit = 0
	// echoGainStep is the echo gain tracker's step per frame (dB): a
	// median tracker, fed only frames the gate explained, so a caller
	// talking over the agent does not teach it to expect a louder echo.
	echoGainStep = 0.5
	// echoGainLeak is how fast the gain rises on frames too loud to be
	// echo (dB per frame): an echo that got louder is adopted in seconds,
	// a caller's sentence moves it by a decibel or two.
	echoGainLeak = 0.05
	// echoSpreadBefore and echoSpreadAfter widen the gate around the
	// estimated delay (blocks): the estimate's error and the room's tail.
	echoSpreadBefore = 1
	echoSpreadAfter  = 2
	// echoHold is how many frames after a frame too loud to be echo (the
	// caller's) the gate stays open: the speech detector's release.
	echoHold = 8
)

// echoPath estimates the echo path's delay and gates caller frames the
// agent's playout explains. Input goroutine; Listen and Explained allocate
// nothing.
type echoPath struct {
	block int // samples per 10 ms block

	// The reference, per block: energy (mean square) and level (dB).
	farE, farL [echoHist]float32
	t          int // blocks seen; the next block's index (mod echoHist)
	lastActive int // index of the last block the reference played, -1 never

	// Delay correlation: means and variances of the levels, and the
	// covariance per lag, over blocks near agent audio.
	mx, my, vx, vy float32
	sxy            [echoLags]float32
	seen           int // blocks the correlation has taken
	delay          int // estimated delay in blocks, -1 before known
	// The echo's gain before and after the canceller, dB: caller energy
	// over the playout's prediction.
	gain, resGain float32
	// The current frame: the gate's prediction (every lag before the
	// delay is known), the prediction at the best lag so far (what the
	// gains are learnt on, so that they mean the same before and after),
	// and the frame's energy before the canceller.
	pred, predBest, raw float32
	best                int // the best lag so far
	hold                int // frames left of the hold after the caller's sound
	loud                int // frames in a row too loud for the echo
	tail                int // frames left of the tail after the echo
}

func newEchoPath(rate int) *echoPath {
	return &echoPath{block: rate / 100, lastActive: -echoHist, delay: -1, gain: echoGainInit, resGain: echoGainInit}
}

// Delay returns the estimated echo delay, or -1 before it is known.
func (e *echoPath) Delay() time.Duration {
	if e.delay < 0 {
		return -1
	}
	return time.Duration(e.delay) * 10 * time.Millisecond
}

// energy returns the mean square of pcm (0 for nil). Four integer sums
// run side by side: one float sum is a chain of dependent additions, and
// this runs on three 20 ms frames per caller frame.
func energy(pcm []int16) float32 {
	if len(pcm) == 0 {
		return 0
	}
	var s0, s1, s2, s3 int64
	i := 0
	for ; i+4 <= len(pcm); i += 4 {
		a, b, c, d := int64(pcm[i]), int64(pcm[i+1]), int64(pcm[i+2]), int64(pcm[i+3])
		s0 += a * a
		s1 += b * b
		s2 += c * c
		s3 += d * d
	}
	for ; i < len(pcm); i++ {
		s0 += int64(pcm[i]) * int64(pcm[i])
	}
	return float32(s0+s1+s2+s3) / float32(len(pcm))
}

// level is energy in dB (0 dB is a mean square of 1 in int16 units).
func level(e float32) float32 { return float32(10 * math.Log10(float64(e)+1)) }

// Listen takes one caller frame as it arrived (before echo cancellation)
// and the reference that played with it (nil when the agent was silent):
// it updates the delay estimate and what the playout predicts for the
// frame. Explained then judges the frame after the canceller.
func (e *echoPath) Listen(far, near []int16) {
	e.pred, e.predBest, e.raw = 0, 0, 0
	for off := 0; off+e.block <= len(near); off += e.block {
		var f []int16
		if far != nil {
			f = far[off : off+e.block]
		}
		ne := energy(near[off : off+e.block])
		p, pb := e.block10(energy(f), ne)
		e.pred += p
		e.predBest += pb
		e.raw += ne
	}
}

// Expected returns the mean square per sample of the echo the playout
// predicts, at the learnt gain, for the caller frame given to Listen (0
// when nothing played can be coming back). n is the frame's length.
func (e *echoPath) Expected(n int) float32 {
	if e.pred <= 0 {
		return 0
	}
	return e.pred / float32(n/e.block) * float32(math.Pow(10, float64(e.gain)/10))
}

// Explained reports whether the caller frame given to Listen, as the
// canceller left it (res), is explained by the agent's playout: it is
// within echoMargin of the echo the playout predicts before the canceller
// (the raw gain), or of what the canceller has been leaving of it (the
// residual gain). Either level is learnt from frames that the raw one
// explains: a caller louder than the echo teaches neither. noise is the
// caller side's noise level (mean square per sample, 0 if unknown): what
// the frame holds above it is compared with the echo, so that a steady
// noise neither teaches the gate a louder echo nor lets it take a caller
// speaking over the noise for the agent.
func (e *echoPath) Explained(res []int16, noise float32) bool {
	if e.pred <= 0 {
		// Nothing played can still be coming back; the first frames after
		// the echo ends still carry the speech detector's smoothing of it.
		if e.tail > 0 {
			e.tail--
			return true
		}
		return false
	}
	p := level(e.pred)
	raw := max(e.raw-noise*float32(len(res)/e.block), 0)
	r, rr := level(raw)-p, level(energy(res)*float32(len(res)/e.block))-p
	pb := level(e.predBest)
	rb, rrb := r+p-pb, rr+p-pb
	active := pb-level(float32(len(res)/e.block)) > echoActiveDB
	if r > e.gain+echoMargin {
		// Too loud for the echo: the caller's (or the echo got louder,
		// which the gain follows slowly).
		if active {
			e.gain += echoGainLeak
		}
		e.loud++
		if e.loud >= 2 {
			e.hold = echoHold
		}
		return false
	}
	e.loud = 0
	if e.hold > 0 {
		// Just after the caller's own sound: the speech detector's
		// smoothing still carries it, and echo under it is no reason
		// to drop it.
		e.hold--
		return false
	}
	if active {
		if rb <= e.gain {
			e.resGain = track(e.resGain, rrb)
		}
		if rb > e.gain {
			e.gain += echoGainStep
		} else {
			e.gain -= echoGainStep
		}
	}
	if rr <= e.resGain+echoMargin {
		e.tail = echoHold
		return true
	}
	return false
}

// track moves a gain (dB) toward a frame's: a quantile tracker that rises
// three times faster than it falls, so it follows an echo that gets
// louder (the canceller lost it) within a few frames.
func track(g, r float32) float32 {
	if r > g {
		return g + 3*echoGainStep
	}
	return g - echoGainStep
}

// block10 takes one 10 ms block's energies (reference and caller), updates
// the delay estimate, and returns the energy the reference predicts for
// the caller's block at gain 0 dB: for the gate, and at the best lag.
func (e *echoPath) block10(fe, ne float32) (gate, best float32) {
	i := e.t % echoHist
	fl, nl := level(fe), level(ne)
	e.farE[i], e.farL[i] = fe, fl
	if fl > echoActiveDB {
		e.lastActive = e.t
	}
	e.t++
	if e.t-1-e.lastActive >= echoLags {
		return 0, 0 // nothing the agent played can still be coming back
	}
	e.correlate(i, nl)
	near := func(d int) float32 {
		var p float32
		for l := max(0, d-echoSpreadBefore); l <= min(echoLags-1, d+echoSpreadAfter); l++ {
			p = max(p, e.farE[(i-l+echoHist)%echoHist])
		}
		return p
	}
	best = near(e.best)
	if e.delay >= 0 {
		return near(e.delay), best
	}
	for l := range echoLags {
		gate = max(gate, e.farE[(i-l+echoHist)%echoHist])
	}
	return gate, best
}

// correlate adds the block at history index i, with the caller's level
// nl, to the delay correlation and updates the estimate.
func (e *echoPath) correlate(i int, nl float32) {
	if e.seen == 0 {
		e.mx, e.my = e.farL[i], nl
	}
	e.seen++
	dx, dy := e.farL[i]-e.mx, nl-e.my
	e.mx += echoAlpha * dx
	e.my += echoAlpha * dy
	e.vx += echoAlpha * (dx*dx - e.vx)
	e.vy += echoAlpha * (dy*dy - e.vy)
	best := -1
	var bestC float32
	for l := range echoLags {
		x := e.farL[(i-l+echoHist)%echoHist] - e.mx
		e.sxy[l] += echoAlpha * (x*dy - e.sxy[l])
		if best < 0 || e.sxy[l] > bestC {
			best, bestC = l, e.sxy[l]
		}
	}
	e.best = best
	if e.seen < echoMinBlocks || e.vx <= 0 || e.vy <= 0 {
		return
	}
	norm := float32(math.Sqrt(float64(e.vx * e.vy)))
	c := bestC / norm
	switch {
	case c < echoMinCorr:
	case e.delay < 0, best != e.delay && c > e.sxy[e.delay]/norm+echoSwitch:
		// The canceller's delay changes, and what it leaves of the echo
		// is learnt again, from the safe side: as much as there was
		// before it.
		e.delay = best
		e.resGain = max(e.resGain, e.gain)
	}
}
