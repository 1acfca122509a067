package resample

import (
	"fmt"
	"math"
	"sync"
)

// initialChunk is the input chunk scratch is sized for: 40 ms at 48 kHz, so
// 20 ms frames at any supported rate never grow it.
const initialChunk = 1920

// Resampler converts one stream of mono PCM16 from one rate to another. It
// keeps the filter history between calls, so a stream cut into chunks of any
// size gives exactly the same output as the whole stream in one call.
//
// A Resampler is not safe for concurrent use; it belongs to one stream. The
// owner must call Close when done (there is no finalizer).
type Resampler struct {
	inRate, outRate int
	f               filter // its coefs are shared with every Resampler of the same design

	// hist is the last taps-1 input samples, as float32: the filter's
	// history, all the memory a stream keeps between chunks besides f.
	hist []float32
	// w is the scratch a ProcessTo or Flush borrowed from works, nil
	// between calls.
	w *work
	// base and phase locate the next output sample: it ends its window at
	// input base of the next chunk (relative to that chunk's start) and uses
	// polyphase branch phase.
	base, phase int
	closed      bool
}

// New returns a Resampler from inRate to outRate with the given quality.
// Both rates may be 8000, 16000, 24000 or 48000 Hz; inRate may also be
// 22050 or 44100 Hz (synthesizers and media files produce those; nothing in
// voiced produces them as output). Equal rates give a copying Resampler with
// no delay.
func New(inRate, outRate int, q Quality) (*Resampler, error) {
	switch inRate {
	case 8000, 16000, 24000, 48000, 22050, 44100:
	default:
		return nil, fmt.Errorf("%w: input %d Hz (want 8000, 16000, 22050, 24000, 44100 or 48000)", ErrUnsupportedRate, inRate)
	}
	switch outRate {
	case 8000, 16000, 24000, 48000:
	default:
		return nil, fmt.Errorf("%w: output %d Hz (want 8000, 16000, 24000 or 48000)", ErrUnsupportedRate, outRate)
	}
	s, ok := q.spec()
	if !ok {
		return nil, fmt.Errorf("%w: %d", ErrUnsupportedQuality, int(q))
	}
	r := &Resampler{inRate: inRate, outRate: outRate}
	if inRate == outRate {
		r.f = filter{up: 1, down: 1}
		return r, nil
	}
	r.f = designed(inRate, outRate, s)
	r.hist = make([]float32, r.f.taps-1)
	return r, nil
}

// work is a chunk's scratch: buf holds taps-1 samples of history followed
// by the chunk, converted to float32; out the filter's outputs before
// their conversion to int16; half runHalf's inner products (a half-band
// filter's phase 1) before they are interleaved with the copied samples.
// Each only grows.
type work struct {
	buf, out, half []float32
}

// works lends scratch to ProcessTo and Flush. A media node resamples a
// frame for each of its calls in turn: with scratch of their own, each
// Resampler's would be out of the CPU's caches by its next frame, and the
// conversions into and out of it would miss on every line (in a CPU
// profile of a node at 1,000 G.711 calls an 8 to 16 kHz frame took
// 2.3 µs, against 0.43 µs in BenchmarkResamplePhone); borrowed, the same
// few kilobytes serve every call on a thread and stay in the L1 cache.
var works = sync.Pool{New: func() any {
	return &work{
		buf:  make([]float32, 0, 256+initialChunk),
		out:  make([]float32, 0, 6*initialChunk),
		half: make([]float32, 0, initialChunk),
	}
}}

// borrow takes scratch from works with buf holding the history and room
// for n more samples.
func (r *Resampler) borrow(n int) *work {
	w := works.Get().(*work)
	hist := len(r.hist)
	if cap(w.buf) < hist+n {
		w.buf = make([]float32, hist+n)
	}
	w.buf = w.buf[:hist+n]
	copy(w.buf, r.hist)
	r.w = w
	return w
}

// giveBack returns r's scratch to works.
func (r *Resampler) giveBack() {
	works.Put(r.w)
	r.w = nil
}

// InputRate returns the input sample rate in Hz.
func (r *Resampler) InputRate() int { return r.inRate }

// OutputRate returns the output sample rate in Hz.
func (r *Resampler) OutputRate() int { return r.outRate }

// Delay returns the group delay in output samples: an input event at output
// time t appears at output index t+Delay(). It is constant for the life of
// the Resampler (0 for equal rates) and is also the number of samples Flush
// writes. The values per rate pair are listed in the package documentation.
func (r *Resampler) Delay() int { return r.f.delay }

// OutputLen returns the largest number of samples ProcessTo can write for an
// input of n samples: n*outRate/inRate rounded up. Whenever the stream so far
// and n are whole multiples of inRate/gcd(inRate, outRate) samples (every
// 20 ms frame at the supported rates is), ProcessTo writes exactly
// n*outRate/inRate.
func (r *Resampler) OutputLen(n int) int {
	return (n*r.f.up + r.f.down - 1) / r.f.down
}

// ProcessTo resamples src and writes the output into dst, returning the
// number of samples written. The output for a chunk is every output sample
// whose time falls within it, so it never holds samples back: it is exactly
// len(src)*outRate/inRate samples per 20 ms frame from the first frame on,
// the first Delay() of them being the filter's start-up. If dst is shorter
// than OutputLen(len(src)) nothing is consumed and ErrShortBuffer is
// returned. ProcessTo works in scratch it borrows for the call from a
// process-wide pool (see works), so it does not allocate unless src is
// longer than 40 ms at 48 kHz and every chunk before it, or the pool is
// empty: at the first use, with more threads resampling at once than ever
// before, or after two garbage collections without any use.
func (r *Resampler) ProcessTo(dst, src []int16) (int, error) {
	if r.closed {
		return 0, ErrClosed
	}
	if r.inRate == r.outRate {
		if len(dst) < len(src) {
			return 0, fmt.Errorf("%w: %d samples for %d", ErrShortBuffer, len(dst), len(src))
		}
		return copy(dst, src), nil
	}
	if need := r.OutputLen(len(src)); len(dst) < need {
		return 0, fmt.Errorf("%w: %d samples for %d", ErrShortBuffer, len(dst), need)
	}
	w := r.borrow(len(src))
	toFloat(w.buf[len(r.hist):], src)
	n := r.run(dst, len(src), len(dst))
	r.giveBack()
	return n, nil
}

// Flush writes the last Delay() output samples, those still inside the
// filter, as if the stream were followed by silence, and resets the
// Resampler for a new stream. dst must hold Delay() samples.
func (r *Resampler) Flush(dst []int16) (int, error) {
	if r.closed {
		return 0, ErrClosed
	}
	d := r.f.delay
	if len(dst) < d {
		return 0, fmt.Errorf("%w: %d samples for a flush of %d", ErrShortBuffer, len(dst), d)
	}
	if d == 0 {
		return 0, nil
	}
	z := r.flushInput()
	w := r.borrow(z)
	clear(w.buf[len(r.hist):])
	n := r.run(dst, z, d)
	r.giveBack()
	r.reset()
	return n, nil
}

// flushInput is the number of zero input samples that yields at least Delay()
// output samples from any position. Between chunks the next output lies
// base*up+phase < down intermediate samples into the next chunk, and z inputs
// yield ceil((z*up - (base*up+phase)) / down) outputs.
func (r *Resampler) flushInput() int {
	return ((r.f.delay-1)*r.f.down+r.f.down-1)/r.f.up + 1
}

// Reset forgets the history so the next ProcessTo starts a new stream, as
// from New.
func (r *Resampler) Reset() error {
	if r.closed {
		return ErrClosed
	}
	r.reset()
	return nil
}

func (r *Resampler) reset() {
	clear(r.hist)
	r.base, r.phase = 0, 0
}

// Close releases the filter and buffers. Later calls return ErrClosed. Close
// is idempotent.
func (r *Resampler) Close() error {
	r.closed = true
	r.hist = nil
	r.f.coefs = nil
	return nil
}

// run computes up to limit output samples from the n new input samples at the
// end of r.w.buf into dst, then keeps the last taps-1 inputs as history. The
// filter writes float32 outputs to r.w.out; one conversion to int16 follows.
func (r *Resampler) run(dst []int16, n, limit int) int {
	f := &r.f
	w := r.w
	k := f.taps
	// At most ceil(n*up/down) outputs end their windows in this chunk.
	limit = min(limit, len(dst), (n*f.up+f.down-1)/f.down)
	if cap(w.out) < limit {
		w.out = make([]float32, limit)
	}
	y := w.out[:limit]
	out := 0
	if len(y) > 0 {
		var ok bool
		if f.half {
			out = r.runHalf(y, n)
		} else if out, ok = r.polySIMD(y, n); !ok {
			if f.down == 1 && r.phase == 0 {
				out = r.runUp(y, n)
			} else {
				out = r.runDot(y, n)
			}
		}
	}
	toInt16s(dst[:out], y[:out])
	r.base -= n
	copy(r.hist, w.buf[n:n+k-1])
	return out
}

// runDot is the portable polyphase loop: one inner product per output, the
// window and phase stepping by down/up. It leaves r.base and r.phase at the
// next output (run then makes r.base relative to the next chunk).
func (r *Resampler) runDot(y []float32, n int) int {
	f := &r.f
	k := f.taps
	stepBase, stepPhase := f.down/f.up, f.down%f.up
	base, phase := r.base, r.phase
	out := 0
	for base < n && out < len(y) {
		y[out] = dotGeneric(f.coefs[phase*k:phase*k+k], r.w.buf[base:base+k])
		out++
		base += stepBase
		phase += stepPhase
		if phase >= f.up {
			phase -= f.up
			base++
		}
	}
	r.base, r.phase = base, phase
	return out
}

// runUp is runDot for integer upsampling (down == 1): every input sample
// starts one window that yields up outputs, one per phase, computed
// together.
func (r *Resampler) runUp(y []float32, n int) int {
	f := &r.f
	k := f.taps
	var ph [6]float32 // up is at most 6 (8 kHz to 48 kHz)
	out := 0
	base := r.base
	for ; base < n && out < len(y); base++ {
		dotPhases(ph[:f.up], f.coefs, r.w.buf[base:base+k], k)
		out += copy(y[out:], ph[:f.up])
	}
	r.base = base
	return out
}

// runHalf is runUp for a half-band filter (QualityPhone): for every input
// window the phase 0 output is the sample at copyAt, copied, and the phase
// 1 output one inner product (by firFMA or dotGeneric, into r.w.half); then
// the two are interleaved into y.
func (r *Resampler) runHalf(y []float32, n int) int {
	f := &r.f
	k := f.taps
	base := r.base
	windows := min(n-base, (len(y)+1)/2)
	if windows <= 0 {
		return 0
	}
	w := r.w
	if cap(w.half) < windows {
		w.half = make([]float32, windows)
	}
	odd := w.half[:windows]
	ph1 := f.coefs[k : 2*k]
	if !r.halfSIMD(odd, ph1, base, windows) {
		for i := range windows {
			odd[i] = dotGeneric(ph1, w.buf[base+i:base+i+k])
		}
	}
	copies := w.buf[base+f.copyAt:]
	pairs := min(windows, len(y)/2)
	interleave(y, copies, odd[:pairs])
	out := 2 * pairs
	if pairs < windows { // an odd limit: the last window gives only its copy
		y[out] = copies[pairs]
		out++
	}
	r.base = base + windows
	return out
}

// interleaveGeneric is the portable interleave.
func interleaveGeneric(y, a, b []float32) {
	for i, v := range b {
		y[2*i] = a[i]
		y[2*i+1] = v
	}
}

// dotPhasesGeneric is the portable version of dotPhases.
func dotPhasesGeneric(out, coefs, x []float32, k int) {
	for p := range out {
		out[p] = dotGeneric(coefs[p*k:(p+1)*k], x)
	}
}

// dotGeneric returns the inner product of a and b[:len(a)] with four
// independent accumulators so the additions pipeline.
func dotGeneric(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// toInt16 saturates and rounds to the nearest integer, ties to even (as the
// vector conversion does, so a sample comes out the same whichever converts
// it).
func toInt16(v float32) int16 {
	return int16(math.RoundToEven(float64(min(max(v, -32768), 32767))))
}
