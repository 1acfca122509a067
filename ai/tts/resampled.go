package tts

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"github.com/voiced/voiced/codecs/resample"
)

// resampleChunk is how many source samples one conversion step reads: 60 ms
// at 22050 Hz (espeak-ng's callback buffer), 55 ms at 24000 Hz.
const resampleChunk = 1323

// Resample returns src, PCM16 at r.InputRate(), as Audio at r.OutputRate(),
// converted by r. The output is aligned with the source: the resampler's
// start-up (its Delay) is dropped and its tail flushed at the end, so n
// source samples come out as n*out/in samples, rounded up. r must be fresh
// or Reset; Resample owns it until Close, which calls release(r) when
// release is not nil (to reuse the filter) and closes r otherwise. Close
// also closes src. Reading allocates nothing.
func Resample(src Audio, r *resample.Resampler, release func(*resample.Resampler)) Audio {
	a := &resampled{src: src, r: r, release: release, skip: r.Delay()}
	a.in = make([]int16, resampleChunk)
	a.buf = make([]int16, r.OutputLen(resampleChunk)+r.Delay())
	return a
}

type resampled struct {
	// mu is held by Read for its duration, so that Close (which first
	// closes src to unblock a Read) releases r only once no Read uses it.
	mu      sync.Mutex
	closed  atomic.Bool
	src     Audio
	r       *resample.Resampler
	release func(*resample.Resampler)
	in      []int16
	buf     []int16 // converted samples: buf[off:end] not yet read
	off     int
	end     int
	skip    int   // start-up samples still to drop
	err     error // returned once buf is empty: io.EOF after the flush
}

func (a *resampled) Read(p []int16) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for {
		if a.closed.Load() {
			return 0, ErrClosed
		}
		if a.off < a.end {
			n := copy(p, a.buf[a.off:a.end])
			a.off += n
			return n, nil
		}
		if a.err != nil {
			return 0, a.err
		}
		if len(p) == 0 {
			return 0, nil
		}
		a.fill()
	}
}

// fill converts the next chunk of the source into buf.
func (a *resampled) fill() {
	a.off, a.end = 0, 0
	n, err := a.src.Read(a.in)
	if n > 0 {
		m, perr := a.r.ProcessTo(a.buf, a.in[:n])
		if perr != nil {
			a.err = perr
			return
		}
		a.end = m
	}
	switch {
	case errors.Is(err, io.EOF):
		m, ferr := a.r.Flush(a.buf[a.end:])
		if ferr != nil {
			a.err = ferr
			return
		}
		a.end += m
		a.err = io.EOF
	case err != nil:
		a.err = err
	}
	drop := min(a.skip, a.end)
	a.off, a.skip = drop, a.skip-drop
}

func (a *resampled) Close() error {
	if a.closed.Swap(true) {
		return nil
	}
	err := a.src.Close()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.release != nil {
		_ = a.r.Reset()
		a.release(a.r)
	} else {
		_ = a.r.Close()
	}
	return err
}
