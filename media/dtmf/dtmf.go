// Package dtmf detects DTMF key presses carried in-band, as tones in the
// audio, for the channels that have no out-of-band digits (the realtime
// WebSocket, a browser's microphone): the Goertzel algorithm on the eight
// ITU-T Q.23 frequencies, with the checks of a Q.24 receiver.
//
// Audio at 16 kHz is first brought to 8 kHz by averaging sample pairs
// (the keys' tones are all below 1.7 kHz, where the average loses under
// 0.5 dB; what folds down from 4-8 kHz is 10 dB or more down where it
// lands on the keys' frequencies): the analysis then costs the same at
// either rate. A 10 ms half quieter than a quarter of the weakest key
// has its energy summed and no bins computed.
//
// Each 20 ms frame is analysed as two 10 ms halves: one Goertzel pass
// over the frame's samples gives every half's eight complex bins, and a
// 20 ms window is two consecutive halves combined (the second half's
// bins turned by its time offset). Windows so slide by 10 ms, with the
// frequency resolution of 20 ms (50 Hz: the closest pair, 697 and
// 770 Hz, are 1.5 bins apart), at the cost of a single pass.
//
// A window holds a digit when
//   - the strongest bin of each group (697-941 Hz, 1209-1633 Hz) is at
//     least MinLevel,
//   - each is 6 dB above every other bin of its group,
//   - the twist is within limits: the high tone at most 8 dB below the
//     low one (normal twist) and at most 4 dB above it (reverse),
//   - and the two tones carry at least 60% of the window's energy (a tone
//     filling half the window has 50%): speech,
//     whose energy spreads over many harmonics and formants, and noise
//     do not (the talk-off guard).
//
// A digit is reported once its pair held for three windows in a row: a
// window whose tone fills 60% of it can pass, so a tone of 20 ms passes
// in at most two and is never taken, one of 40 ms in at least three and
// always is (in noise 5 dB under the tones, from about 50 ms). The key
// press ends after three windows without it (30 ms of something else),
// so a dropout of 10 ms does not make a press two.
package dtmf

import (
	"errors"
	"fmt"
	"math"
)

// ErrRate is returned by New for a sample rate it does not analyse.
var ErrRate = errors.New("dtmf: sample rate must be 8000 or 16000 Hz")

// The Q.23 frequencies: rows (low group) and columns (high group).
var (
	lowHz  = [4]float64{697, 770, 852, 941}
	highHz = [4]float64{1209, 1336, 1477, 1633}
	keys   = [4][4]rune{{'1', '2', '3', 'A'}, {'4', '5', '6', 'B'}, {'7', '8', '9', 'C'}, {'*', '0', '#', 'D'}}
)

// Thresholds (package doc).
const (
	// MinLevel is the weakest tone taken, in dBFS of its peak amplitude
	// (a full-scale sine is 0): about -36 dBm0 on a G.711 line.
	MinLevel = -39.0
	// peakRatio: a tone's bin over every other bin of its group (6 dB).
	peakRatio = 3.98
	// normalTwist and reverseTwist bound high over low tone power: 8 dB
	// below, 4 dB above.
	normalTwist  = 0.158
	reverseTwist = 2.51
	// minShare is the tones' share of the window's energy.
	minShare = 0.6
	// onWindows a pair must hold to be reported; offWindows without it
	// end the key press.
	onWindows  = 3
	offWindows = 3
)

// Detector finds key presses in a stream of 20 ms frames. It is not safe
// for concurrent use, allocates nothing after New, and keeps per stream
// only the last half frame's bins and the press in progress.
type Detector struct {
	frame, half int // at the analysis rate, 8 kHz
	in          int // samples per frame Process takes
	dec         [80]int16
	coef        [8]float32   // 2 cos(ω) per bin, low group then high
	cos, sin    [8]float32   // cos ω, sin ω: the last step of a half's bins
	rotRe       [8]float32   // e^{-jωM}: the second half's bins, turned
	rotIm       [8]float32   //   to the window's time origin
	minPower    float32      // MinLevel as |X|² of a half-window (M samples)
	quietHalf   float32      // a half's energy below which its bins are not computed
	prev        [8]complex64 // the previous half's bins (its own origin)
	prevE       float32      // and its energy
	havePrev    bool
	cur         [2][8]complex64
	curE        [2]float32

	cand    rune // the pair of the last windows
	run     int  // windows in a row cand held
	off     int  // windows in a row without the press's key
	pressed rune // the key press in progress (0: none)
	tone    bool // the last window held a pair
}

// New returns a detector for frames of 20 ms at rate (8000 or 16000 Hz).
func New(rate int) (*Detector, error) {
	if rate != 8000 && rate != 16000 {
		return nil, fmt.Errorf("%w: %d", ErrRate, rate)
	}
	const at = 8000 // the analysis rate
	d := &Detector{frame: at / 50, half: at / 100, in: rate / 50}
	for i, f := range append(lowHz[:], highHz[:]...) {
		w := 2 * math.Pi * f / at
		d.coef[i] = float32(2 * math.Cos(w))
		d.cos[i], d.sin[i] = float32(math.Cos(w)), float32(math.Sin(w))
		d.rotRe[i], d.rotIm[i] = float32(math.Cos(w*float64(d.half))), float32(-math.Sin(w*float64(d.half)))
	}
	// A sine of amplitude A over a window of N = 2M samples has |X| =
	// A·N/2 at its frequency.
	a := 32768 * math.Pow(10, MinLevel/20)
	d.minPower = float32(a * a * float64(d.half) * float64(d.half))
	// A half whose energy is under a quarter of what the weakest pair
	// fills it with (A² per sample) holds no key's tone worth its bins: a
	// window passes only with the tones in 60% of it, so in 40% or more of
	// each half.
	d.quietHalf = float32(a * a * float64(d.half) / 4)
	return d, nil
}

// FrameSamples is the frame size Process takes.
func (d *Detector) FrameSamples() int { return d.in }

// Process analyses the next 20 ms frame and returns the key (0-9, *, #,
// A-D) whose press was recognised in it, or 0. pcm must hold
// FrameSamples samples; it is only read.
func (d *Detector) Process(pcm []int16) rune {
	if len(pcm) != d.in {
		return 0
	}
	if d.in != d.frame {
		for h := range 2 {
			x := pcm[h*d.in/2 : (h+1)*d.in/2]
			dec := d.dec[:len(x)/2]
			for i := range dec {
				dec[i] = int16((int32(x[2*i]) + int32(x[2*i+1])) >> 1)
			}
			d.goertzel(dec, &d.cur[h], &d.curE[h])
		}
	} else {
		d.goertzel(pcm[:d.half], &d.cur[0], &d.curE[0])
		d.goertzel(pcm[d.half:], &d.cur[1], &d.curE[1])
	}
	var key rune
	if d.havePrev {
		if k := d.window(&d.prev, d.prevE, &d.cur[0], d.curE[0]); k != 0 {
			key = k
		}
	}
	if k := d.window(&d.cur[0], d.curE[0], &d.cur[1], d.curE[1]); k != 0 {
		key = k
	}
	d.prev, d.prevE, d.havePrev = d.cur[1], d.curE[1], true
	return key
}

// Tone reports whether the last window held a DTMF pair: the caller's
// audio is a key's tone, not speech.
func (d *Detector) Tone() bool { return d.tone }

// Reset forgets the stream (a new one starts with the next frame).
func (d *Detector) Reset() {
	d.havePrev, d.cand, d.run, d.off, d.pressed, d.tone = false, 0, 0, 0, 0, false
}

// goertzel computes x's eight bins, each as Y = s[M-1] - e^{-jω}s[M-2]
// (the DTFT at ω times e^{jω(M-1)}, a phase every bin of the half shares
// with its window partner), and x's energy.
func (d *Detector) goertzel(x []int16, out *[8]complex64, energy *float32) {
	var e float32
	for _, v := range x {
		f := float32(v)
		e += f * f
	}
	*energy = e
	if e < d.quietHalf {
		*out = [8]complex64{}
		return
	}
	var s1, s2 [8]float32
	s1[0], s2[0], s1[1], s2[1], s1[2], s2[2], s1[3], s2[3] = group(x, d.coef[0], d.coef[1], d.coef[2], d.coef[3])
	s1[4], s2[4], s1[5], s2[5], s1[6], s2[6], s1[7], s2[7] = group(x, d.coef[4], d.coef[5], d.coef[6], d.coef[7])
	for k := range out {
		out[k] = complex(s1[k]-d.cos[k]*s2[k], d.sin[k]*s2[k])
	}
}

// group runs four Goertzel recurrences (coefficients c0-c3) over x: one
// group at a time, their state fits the CPU's registers, and the four
// independent chains overlap.
func group(x []int16, c0, c1, c2, c3 float32) (a1, a2, b1, b2, c1s, c2s, d1, d2 float32) {
	for _, v := range x {
		f := float32(v)
		a1, a2 = f+c0*a1-a2, a1
		b1, b2 = f+c1*b1-b2, b1
		c1s, c2s = f+c2*c1s-c2s, c1s
		d1, d2 = f+c3*d1-d2, d1
	}
	return
}

// window judges the 20 ms window of halves a then b and moves the key
// press state; it returns the key when a press is recognised.
func (d *Detector) window(a *[8]complex64, ea float32, b *[8]complex64, eb float32) rune {
	var p [8]float32
	for k := range p {
		// X_ab ∝ Y_a + e^{-jωM}·Y_b (the halves' common phase dropped).
		br, bi := real(b[k]), imag(b[k])
		re := real(a[k]) + br*d.rotRe[k] - bi*d.rotIm[k]
		im := imag(a[k]) + br*d.rotIm[k] + bi*d.rotRe[k]
		p[k] = re*re + im*im
	}
	key := d.pair(&p, ea+eb)
	d.tone = key != 0
	return d.step(key)
}

// pair returns the key whose tones the window's bin powers p hold, or 0.
// energy is the window's Σx².
func (d *Detector) pair(p *[8]float32, energy float32) rune {
	lo, hi := 0, 4
	for k := 1; k < 4; k++ {
		if p[k] > p[lo] {
			lo = k
		}
		if p[4+k] > p[hi] {
			hi = 4 + k
		}
	}
	pl, ph := p[lo], p[hi]
	if pl < d.minPower || ph < d.minPower {
		return 0
	}
	if ph < pl*normalTwist || ph > pl*reverseTwist {
		return 0
	}
	for k := 0; k < 4; k++ {
		if k != lo && p[k]*peakRatio > pl {
			return 0
		}
		if 4+k != hi && p[4+k]*peakRatio > ph {
			return 0
		}
	}
	// A tone of amplitude A has power A²/2 and |X|² = A²N²/4, so the
	// tones' share of the window's power Σx²/N is 2(|X_l|²+|X_h|²)/(N·Σx²).
	n := float32(2 * d.half)
	if 2*(pl+ph) < minShare*n*energy {
		return 0
	}
	return keys[lo][hi-4]
}

// step moves the key press state by one window that held key (0: none).
func (d *Detector) step(key rune) rune {
	if key != 0 && key == d.cand {
		d.run++
	} else {
		d.cand, d.run = key, 0
		if key != 0 {
			d.run = 1
		}
	}
	if d.pressed != 0 {
		if key == d.pressed {
			d.off = 0
			return 0
		}
		d.off++
		if d.off < offWindows {
			return 0
		}
		d.pressed, d.off = 0, 0
	}
	if d.cand != 0 && d.run >= onWindows {
		d.pressed, d.off = d.cand, 0
		return d.cand
	}
	return 0
}
