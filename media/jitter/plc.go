package jitter

import "math"

// PLC conceals lost G.711 audio in the manner of ITU-T G.711 Appendix I:
// at the start of a loss it estimates the pitch period of the last 20 ms
// by normalized cross-correlation (5 to 15 ms), then plays the last pitch
// period again and again, widening the repeated span to two periods after
// 10 ms and three after 20 ms so the result does not buzz, and smoothing
// the loop seam with a quarter-period overlap-add. From 10 ms into the loss
// the output fades by 20% per 10 ms, reaching silence at 60 ms. The first
// good frame after a loss is cross-faded from the synthetic signal over a
// quarter period plus 4 ms (4 ms more per 10 ms lost, at most 10 ms).
//
// Unlike Appendix I it adds no delay: Appendix I holds 3.75 ms back so it
// can also smooth the last real samples before a loss; here the seam is
// smoothed inside the repeated span instead.
//
// A PLC works at one rate (8 kHz for G.711; any 8k multiple works) and
// belongs to one stream. It allocates only in NewPLC.
type PLC struct {
	rate                int
	pitchMin, pitchMax  int
	corrLen             int
	hist                []int16 // the most recent output, oldest first: a window on histBuf
	histBuf             []int16 // hist and room to append to it (remember)
	histOff             int     // where hist starts in histBuf
	frozen              []int16 // hist as it was when the current loss began
	pbuf                []int16 // the repeated span, seam already smoothed
	pitch, periods, pos int
	erased              int // samples concealed in the current loss
	ms10                int // samples in 10 ms
	corrX               []float32
}

// NewPLC returns a concealer for audio at rate Hz (a multiple of 8000).
func NewPLC(rate int) *PLC {
	p := new(PLC)
	p.init(rate)
	return p
}

// init sets up p for rate, as NewPLC does.
func (p *PLC) init(rate int) {
	k := max(rate/8000, 1)
	*p = PLC{
		rate:     rate,
		pitchMin: 40 * k,
		pitchMax: 120 * k,
		corrLen:  160 * k,
		ms10:     rate / 100,
	}
	n := 3*p.pitchMax + p.pitchMax/4
	p.histBuf = make([]int16, n+histRoom*p.ms10)
	p.hist = p.histBuf[:n]
	p.frozen = make([]int16, n)
	p.pbuf = make([]int16, 3*p.pitchMax)
	p.corrX = make([]float32, p.pitchMax+p.corrLen)
}

// Good records a frame of received audio. After a loss it cross-fades the
// start of frame, in place, from the concealment into the real signal.
func (p *PLC) Good(frame []int16) {
	if p.erased > 0 {
		ola := p.pitch/4 + p.ms10*4/10 + (p.erased/p.ms10)*p.ms10*4/10
		ola = min(ola, p.ms10, len(frame))
		for j := 0; j < ola; j++ {
			w := float32(j+1) / float32(ola+1)
			s := float32(p.synth()) * (1 - w)
			frame[j] = sat(s + float32(frame[j])*w)
		}
		p.erased = 0
	}
	p.remember(frame)
}

// Conceal fills dst with the continuation of the signal for a lost span.
func (p *PLC) Conceal(dst []int16) {
	if p.erased == 0 {
		copy(p.frozen, p.hist)
		p.pitch = p.findPitch()
		p.setPeriods(1)
		p.pos = 0
	}
	for i := range dst {
		dst[i] = p.synth()
	}
	p.remember(dst)
}

// synth returns the next concealment sample and advances the loss clock.
func (p *PLC) synth() int16 {
	switch p.erased {
	case p.ms10:
		p.setPeriods(2)
	case 2 * p.ms10:
		p.setPeriods(3)
	}
	// Gain: 1 for the first 10 ms, then -20% per 10 ms, 0 from 60 ms.
	g := float32(1)
	if p.erased >= p.ms10 {
		g = 1 - 0.2*float32(p.erased-p.ms10)/float32(p.ms10)
		g = max(g, 0)
	}
	s := p.pbuf[p.pos]
	p.pos++
	if p.pos >= p.periods*p.pitch {
		p.pos = 0
	}
	p.erased++
	return sat(float32(s) * g)
}

// setPeriods rebuilds the repeated span as the last k pitch periods of the
// history before the loss, its last quarter period cross-faded into the quarter period
// before the span so the loop is seamless, and keeps the read position on
// the same history sample.
func (p *PLC) setPeriods(k int) {
	if k > 1 {
		p.pos += (k - p.periods) * p.pitch
	}
	p.periods = k
	h := p.frozen
	n := len(h)
	span := k * p.pitch
	q := p.pitch / 4
	copy(p.pbuf, h[n-span:])
	for j := 0; j < q; j++ {
		w := float32(j+1) / float32(q+1)
		a := float32(h[n-q+j])
		b := float32(h[n-span-q+j])
		p.pbuf[span-q+j] = sat(a*(1-w) + b*w)
	}
	if p.pos >= span {
		p.pos %= span
	}
}

// findPitch returns the lag in [pitchMin, pitchMax] that maximizes the
// normalized cross-correlation of the last corrLen samples with the
// history before them.
func (p *PLC) findPitch() int {
	n := len(p.hist)
	x := p.corrX
	copy16f(x, p.hist[n-len(x):])
	tail := x[len(x)-p.corrLen:]
	best, bestScore := p.pitchMax, float32(-1)
	for lag := p.pitchMin; lag <= p.pitchMax; lag++ {
		past := x[len(x)-p.corrLen-lag : len(x)-lag]
		var c, e float32
		for i, v := range tail {
			c += v * past[i]
			e += past[i] * past[i]
		}
		if e <= 0 || c <= 0 {
			continue
		}
		if s := c / float32(math.Sqrt(float64(e))); s > bestScore {
			best, bestScore = lag, s
		}
	}
	return best
}

// histRoom is the room after the history, in 10 ms steps: remember
// appends a frame by moving the history's window along its buffer and
// moves the history back to the start only when the room runs out, once
// every few frames, instead of shifting it on every frame.
const histRoom = 16

// remember appends audio to the history.
func (p *PLC) remember(a []int16) {
	n := len(p.hist)
	if len(a) >= n {
		copy(p.histBuf, a[len(a)-n:])
		p.histOff = 0
	} else {
		if p.histOff+n+len(a) > len(p.histBuf) {
			copy(p.histBuf, p.histBuf[p.histOff+len(a):p.histOff+n])
			p.histOff = 0
			copy(p.histBuf[n-len(a):], a)
		} else {
			copy(p.histBuf[p.histOff+n:], a)
			p.histOff += len(a)
		}
	}
	p.hist = p.histBuf[p.histOff : p.histOff+n]
}

func copy16f(dst []float32, src []int16) {
	for i, v := range src[:len(dst)] {
		dst[i] = float32(v)
	}
}

// sat rounds and saturates to int16.
func sat(v float32) int16 {
	switch {
	case v >= 32767:
		return 32767
	case v <= -32768:
		return -32768
	case v >= 0:
		return int16(v + 0.5)
	}
	return int16(v - 0.5)
}
