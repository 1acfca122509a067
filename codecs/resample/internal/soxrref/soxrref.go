// Package soxrref is a minimal cgo binding to libsoxr, kept only as a
// reference to benchmark and measure codecs/resample against (the package
// documentation of codecs/resample says why libsoxr is not used on the call
// path: it outputs in bursts of up to 165 ms). It is internal and nothing in
// production imports it.
package soxrref

/*
#cgo pkg-config: soxr
#cgo noescape vd_soxr_process
#cgo nocallback vd_soxr_process
#include <stddef.h>
#include <soxr.h>

typedef struct {
	size_t in_done, out_done;
	const char *err;
} vd_soxr_result;

static soxr_t vd_soxr_new(double in, double out, unsigned long recipe, const char **err) {
	soxr_io_spec_t io = soxr_io_spec(SOXR_INT16_I, SOXR_INT16_I);
	io.flags = SOXR_NO_DITHER;
	soxr_quality_spec_t q = soxr_quality_spec(recipe, 0);
	return soxr_create(in, out, 1, err, &io, &q, NULL);
}

// in == NULL tells soxr that the input has ended, so it drains.
static vd_soxr_result vd_soxr_process(soxr_t s, const short *in, size_t in_len, short *out, size_t out_len) {
	vd_soxr_result r;
	r.err = soxr_process(s, in, in_len, &r.in_done, out, out_len, &r.out_done);
	return r;
}
*/
import "C"

import (
	"errors"
	"fmt"
)

// HQ and VHQ are libsoxr's SOXR_HQ (20-bit) and SOXR_VHQ (28-bit) recipes.
const (
	HQ  = 4
	VHQ = 6
)

// ErrIncomplete is returned when soxr did not consume the whole input.
var ErrIncomplete = errors.New("soxrref: input not fully consumed")

// Resampler is one mono soxr stream with int16 I/O and no dither. Close
// frees it.
type Resampler struct {
	s C.soxr_t
}

// New returns a soxr resampler from inRate to outRate with the given recipe.
func New(inRate, outRate, recipe int) (*Resampler, error) {
	var cerr *C.char
	s := C.vd_soxr_new(C.double(inRate), C.double(outRate), C.ulong(recipe), &cerr)
	if cerr != nil || s == nil {
		return nil, fmt.Errorf("soxrref: create %d->%d: %s", inRate, outRate, C.GoString(cerr))
	}
	return &Resampler{s: s}, nil
}

// ProcessTo resamples src into dst and returns the number of samples written,
// which varies from call to call (soxr works in DFT blocks).
func (r *Resampler) ProcessTo(dst, src []int16) (int, error) {
	if len(src) == 0 || len(dst) == 0 {
		return 0, nil
	}
	res := C.vd_soxr_process(r.s, (*C.short)(&src[0]), C.size_t(len(src)), (*C.short)(&dst[0]), C.size_t(len(dst)))
	if res.err != nil {
		return 0, fmt.Errorf("soxrref: process: %s", C.GoString(res.err))
	}
	if int(res.in_done) != len(src) {
		return int(res.out_done), ErrIncomplete
	}
	return int(res.out_done), nil
}

// Flush drains what soxr still holds into dst.
func (r *Resampler) Flush(dst []int16) (int, error) {
	if len(dst) == 0 {
		return 0, nil
	}
	res := C.vd_soxr_process(r.s, nil, 0, (*C.short)(&dst[0]), C.size_t(len(dst)))
	if res.err != nil {
		return 0, fmt.Errorf("soxrref: flush: %s", C.GoString(res.err))
	}
	return int(res.out_done), nil
}

// Close frees the C state. It is idempotent.
func (r *Resampler) Close() error {
	if r.s != nil {
		C.soxr_delete(r.s)
		r.s = nil
	}
	return nil
}
