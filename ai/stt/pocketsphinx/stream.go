package pocketsphinx

/*
#include <pocketsphinx.h>
#include <sphinxbase/cmn.h>

// voiced_cmn_begin starts a segment's running cepstral mean from init,
// weighted as prior frames: the library's own live mean starts a decoder
// from the model's -cmninit weighted as 500 frames (5 s) and carries it over
// from segment to segment, whoever spoke them.
static void voiced_cmn_begin(ps_decoder_t *ps, const float *init, int prior) {
	cmn_t *c = ps_get_feat(ps)->cmn_struct;
	for (int i = 0; i < c->veclen; i++) {
		c->cmn_mean[i] = init[i];
		c->sum[i] = init[i] * prior;
	}
	c->nframe = prior;
}

// voiced_cmn_follow makes the mean the running mean of the frames so far
// (the library only updates it every 3 s).
static void voiced_cmn_follow(ps_decoder_t *ps) {
	cmn_t *c = ps_get_feat(ps)->cmn_struct;
	if (c->nframe <= 0) {
		return;
	}
	for (int i = 0; i < c->veclen; i++) {
		c->cmn_mean[i] = c->sum[i] / c->nframe;
	}
}

static int voiced_cmn_len(ps_decoder_t *ps) { return ps_get_feat(ps)->cmn_struct->veclen; }

static void voiced_cmn_get(ps_decoder_t *ps, float *out) {
	cmn_t *c = ps_get_feat(ps)->cmn_struct;
	for (int i = 0; i < c->veclen; i++) {
		out[i] = c->cmn_mean[i];
	}
}
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
	s := &stream{rec: p, g: newNoise()}
	s.grow(padSamples)
	s.g.pad(s.buf[:padSamples], nil)
	var err error
	onDecodeThread(func() {
		if C.ps_start_utt(p.ps) != 0 {
			err = fmt.Errorf("%w: start of utterance", ErrDecode)
			return
		}
		p.cmnBegin()
		if err = s.process(s.buf[:padSamples]); err != nil {
			C.ps_end_utt(p.ps)
		}
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// transcribeStreamed decodes pcm as a stream, 100 ms at a time; the
// caller holds the semaphore.
func (p *Recognizer) transcribeStreamed(ctx context.Context, pcm []int16) (stt.Result, error) {
	s, err := p.begin()
	if err != nil {
		return stt.Result{}, err
	}
	for i := 0; i < len(pcm); i += hypEvery {
		if err := s.Write(pcm[i:min(len(pcm), i+hypEvery)]); err != nil {
			s.Close()
			return stt.Result{}, err
		}
	}
	return s.Finish(ctx)
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

// cmnEvery is how often a stream's cepstral mean follows its audio: 50
// ms.
const cmnEvery = stt.SampleRate / 20

// cmnPrior is the weight of the model's mean in a segment's running
// cepstral mean: 20 frames (200 ms), so that the mean is the segment's own
// after its first words, whatever the caller's level and channel.
const cmnPrior = 20

// cmnBegin restarts the running cepstral mean from the model's for a
// segment. The mean the decoder started with is kept at the first call.
func (p *Recognizer) cmnBegin() {
	if p.cmnInit == nil {
		p.cmnInit = make([]C.float, int(C.voiced_cmn_len(p.ps)))
		C.voiced_cmn_get(p.ps, &p.cmnInit[0])
	}
	C.voiced_cmn_begin(p.ps, &p.cmnInit[0], cmnPrior)
}

func (s *stream) Write(pcm []int16) error {
	if s.done {
		return ErrClosed
	}
	if len(pcm) == 0 {
		return nil
	}
	var err error
	onDecodeThread(func() { err = s.write(pcm) })
	return err
}

// write decodes pcm; it runs on a decoding thread.
func (s *stream) write(pcm []int16) error {
	for len(pcm) > 0 {
		// The running mean follows at fixed points of the segment
		// (every cmnEvery samples), so the words do not depend on how
		// the audio was cut into writes.
		n := min(len(pcm), cmnEvery-s.written%cmnEvery)
		src := pcm[:n]
		if s.rec.dither {
			s.grow(n)
			s.g.dither(s.buf, src)
			src = s.buf
		}
		if err := s.process(src); err != nil {
			return err
		}
		s.written += n
		if s.written%cmnEvery == 0 {
			C.voiced_cmn_follow(s.rec.ps)
		}
		pcm = pcm[n:]
	}
	return nil
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
	var err error
	onDecodeThread(func() {
		if err = s.process(s.buf); err != nil {
			return
		}
		s.finished = true
		if C.ps_end_utt(s.rec.ps) != 0 {
			err = fmt.Errorf("%w: end of utterance", ErrDecode)
		}
	})
	if err != nil {
		return stt.Result{}, err
	}
	return s.rec.result(), nil
}

func (s *stream) Close() error {
	if s.done {
		return nil
	}
	s.done = true
	if !s.finished {
		onDecodeThread(func() { C.ps_end_utt(s.rec.ps) })
	}
	if s.release != nil {
		s.release()
	}
	return nil
}
