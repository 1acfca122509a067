package espeak

import (
	"context"
	"io"
	"sync"
	"sync/atomic"

	"github.com/voiced/voiced/ai/tts"
)

// stream is one request's native-rate audio: the synthesizer goroutine
// appends, the reader consumes. It implements tts.Audio at 22050 Hz.
type stream struct {
	text      string
	voice     string // the voice file's identifier, with any "+variant"
	wpm       int
	ctx       context.Context
	stopAfter func() bool

	stopped atomic.Bool // abort at the next buffer
	notify  chan struct{}

	mu      sync.Mutex
	buf     []int16 // buf[off:] not yet read
	off     int
	done    bool
	err     error // the end: nil means io.EOF
	stopErr error // why it was stopped
}

func (st *stream) push(samples []int16) {
	st.mu.Lock()
	if st.off == len(st.buf) {
		st.buf, st.off = st.buf[:0], 0
	}
	st.buf = append(st.buf, samples...)
	st.mu.Unlock()
	st.wake()
}

func (st *stream) wake() {
	select {
	case st.notify <- struct{}{}:
	default:
	}
}

// finish ends the stream with err, or with the reason it was stopped.
func (st *stream) finish(err error) {
	st.mu.Lock()
	st.done = true
	switch {
	case st.stopErr != nil:
		st.err = st.stopErr
	case err != nil:
		st.err = err
	}
	st.mu.Unlock()
	if st.stopAfter != nil {
		st.stopAfter()
	}
	st.wake()
}

// stop makes the synthesis abort at its next buffer and Read fail with err.
func (st *stream) stop(err error) {
	st.mu.Lock()
	if st.stopErr == nil {
		st.stopErr = err
	}
	st.mu.Unlock()
	st.stopped.Store(true)
	st.wake()
}

// Read returns native-rate samples as they are synthesized.
func (st *stream) Read(p []int16) (int, error) {
	for {
		if st.ctx.Err() != nil {
			// The AfterFunc may not have run yet.
			st.stop(context.Cause(st.ctx))
		}
		st.mu.Lock()
		switch {
		case st.stopErr != nil:
			err := st.stopErr
			st.mu.Unlock()
			return 0, err
		case st.off < len(st.buf):
			n := copy(p, st.buf[st.off:])
			st.off += n
			st.mu.Unlock()
			return n, nil
		case st.done:
			err := st.err
			st.mu.Unlock()
			if err == nil {
				err = io.EOF
			}
			return 0, err
		}
		st.mu.Unlock()
		<-st.notify
	}
}

// Close stops the synthesis at its next buffer (or before it starts, if it
// is still queued). It does not wait.
func (st *stream) Close() error {
	st.stop(tts.ErrClosed)
	return nil
}
