// Package speexref is a minimal cgo binding to libspeexdsp's resampler, kept
// only as a reference to benchmark and measure codecs/resample against. It is
// internal and nothing in production imports it.
package speexref

/*
#cgo pkg-config: speexdsp
#cgo noescape vd_speex_process
#cgo nocallback vd_speex_process
#include <stdint.h>
#include <speex/speex_resampler.h>

typedef struct {
	spx_uint32_t in_done, out_done;
	int err;
} vd_speex_result;

static vd_speex_result vd_speex_process(SpeexResamplerState *st, const spx_int16_t *in, spx_uint32_t in_len, spx_int16_t *out, spx_uint32_t out_len) {
	vd_speex_result r;
	r.in_done = in_len;
	r.out_done = out_len;
	r.err = speex_resampler_process_int(st, 0, in, &r.in_done, out, &r.out_done);
	return r;
}
*/
import "C"

import (
	"errors"
	"fmt"
)

// ErrIncomplete is returned when speex did not consume the whole input
// because dst was too short.
var ErrIncomplete = errors.New("speexref: input not fully consumed")

// Resampler is one mono speex resampler. Close frees it.
type Resampler struct {
	st *C.SpeexResamplerState
}

// New returns a speex resampler from inRate to outRate at quality 0..10.
func New(inRate, outRate, quality int) (*Resampler, error) {
	var cerr C.int
	st := C.speex_resampler_init(1, C.spx_uint32_t(inRate), C.spx_uint32_t(outRate), C.int(quality), &cerr)
	if st == nil || cerr != 0 {
		return nil, fmt.Errorf("speexref: init %d->%d q%d: %s", inRate, outRate, quality, C.GoString(C.speex_resampler_strerror(cerr)))
	}
	return &Resampler{st: st}, nil
}

// ProcessTo resamples src into dst and returns the number of samples written.
func (r *Resampler) ProcessTo(dst, src []int16) (int, error) {
	if len(src) == 0 || len(dst) == 0 {
		return 0, nil
	}
	res := C.vd_speex_process(r.st, (*C.spx_int16_t)(&src[0]), C.spx_uint32_t(len(src)), (*C.spx_int16_t)(&dst[0]), C.spx_uint32_t(len(dst)))
	if res.err != 0 {
		return 0, fmt.Errorf("speexref: process: %s", C.GoString(C.speex_resampler_strerror(res.err)))
	}
	if int(res.in_done) != len(src) {
		return int(res.out_done), ErrIncomplete
	}
	return int(res.out_done), nil
}

// Delay returns speex's output latency in output samples.
func (r *Resampler) Delay() int { return int(C.speex_resampler_get_output_latency(r.st)) }

// Close frees the C state. It is idempotent.
func (r *Resampler) Close() error {
	if r.st != nil {
		C.speex_resampler_destroy(r.st)
		r.st = nil
	}
	return nil
}
