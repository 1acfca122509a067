package pocketsphinx

/*
#include <pocketsphinx.h>
*/
import "C"

import (
	"context"
	"fmt"
	"strings"
	"unsafe"

	"github.com/voiced/voiced/ai/stt"
)

// Stream begins decoding a segment as it arrives: the decoder is this
// stream's until Finish or Close, and each Write decodes at once, so that
// Finish has only the segment's last frames and the search's end to do.
// r.PCM, if any, is the first audio. Language and Prompt are ignored.
//
// Unlike Transcribe, a stream's cepstral mean is a running one (the
// decoder's live CMN, which carries over from segment to segment): the
// whole segment is not there to take its mean.
func (p *Recognizer) Stream(ctx context.Context, r stt.Request) (stt.Stream, error) {
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	s, err := p.begin()
	if err != nil {
		<-p.sem
		return nil, err
	}
	s.release = func() { <-p.sem }
	if len(r.PCM) > 0 {
		if err := s.Write(r.PCM); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// begin starts an utterance on the decoder, whose semaphore the caller
// holds, with the leading padding decoded.
func (p *Recognizer) begin() (*stream, error) {
	if p.ps == nil {
		return nil, ErrClosed
	}
	if C.ps_start_utt(p.ps) != 0 {
		return nil, fmt.Errorf("%w: start of utterance", ErrDecode)
	}
	s := &stream{rec: p, g: newNoise()}
	s.grow(padSamples)
	s.g.pad(s.buf[:padSamples], nil)
	if err := s.process(s.buf[:padSamples]); err != nil {
		C.ps_end_utt(p.ps)
		return nil, err
	}
	return s, nil
}

// stream is a Recognizer's segment in progress.
type stream struct {
	rec     *Recognizer
	g       noise
	buf     []int16 // dithered samples, or padding
	written int
	// hyp is the partial hypothesis, read again after at least hypEvery
	// new samples.
	hyp      string
	hypAt    int
	done     bool
	release  func()
	finished bool
}

// hypEvery is how much new audio makes Partial ask the decoder again
// (100 ms): asking costs a backtrace through the search.
const hypEvery = stt.SampleRate / 10

func (s *stream) grow(n int) {
	if cap(s.buf) < n {
		s.buf = make([]int16, n)
	}
	s.buf = s.buf[:n]
}

// process decodes samples as they come (not a full utterance).
func (s *stream) process(pcm []int16) error {
	if len(pcm) == 0 {
		return nil
	}
	// The samples are Go memory without pointers, only read during the call.
	if C.ps_process_raw(s.rec.ps, (*C.int16)(unsafe.Pointer(&pcm[0])), C.size_t(len(pcm)), 0, 0) < 0 {
		return fmt.Errorf("%w: %d samples", ErrDecode, len(pcm))
	}
	return nil
}

func (s *stream) Write(pcm []int16) error {
	if s.done {
		return ErrClosed
	}
	if len(pcm) == 0 {
		return nil
	}
	src := pcm
	if s.rec.dither {
		s.grow(len(pcm))
		s.g.dither(s.buf, pcm)
		src = s.buf
	}
	s.written += len(pcm)
	return s.process(src)
}

func (s *stream) Partial() string {
	if s.done {
		return s.hyp
	}
	if s.written-s.hypAt >= hypEvery || s.hypAt == 0 && s.written > 0 {
		s.hypAt = s.written
		var score C.int32
		if h := C.ps_get_hyp(s.rec.ps, &score); h != nil {
			s.hyp = strings.Join(strings.Fields(C.GoString(h)), " ")
		} else {
			s.hyp = ""
		}
	}
	return s.hyp
}

// Finish decodes the trailing padding, ends the utterance and returns the
// final hypothesis. ctx is only checked before: the end of the search is
// not interruptible.
func (s *stream) Finish(ctx context.Context) (stt.Result, error) {
	if s.done {
		return stt.Result{}, ErrClosed
	}
	defer s.Close()
	if err := ctx.Err(); err != nil {
		return stt.Result{}, context.Cause(ctx)
	}
	s.grow(padSamples)
	s.g.pad(s.buf, nil)
	if err := s.process(s.buf); err != nil {
		return stt.Result{}, err
	}
	s.finished = true
	if C.ps_end_utt(s.rec.ps) != 0 {
		return stt.Result{}, fmt.Errorf("%w: end of utterance", ErrDecode)
	}
	return s.rec.result(), nil
}

func (s *stream) Close() error {
	if s.done {
		return nil
	}
	s.done = true
	if !s.finished {
		C.ps_end_utt(s.rec.ps)
	}
	if s.release != nil {
		s.release()
	}
	return nil
}
