package mp3

/*
#cgo LDFLAGS: -lmp3lame
#include <lame/lame.h>
*/
import "C"

import (
	"fmt"
	"runtime"
	"slices"
	"unsafe"
)

// Config selects the stream an Encoder produces. Zero BitrateKbps means
// the default for the rate and channel count.
type Config struct {
	// SampleRate is the input and output rate in Hz.
	SampleRate int
	// Channels is 1 (mono) or 2 (stereo, input interleaved left, right).
	Channels int
	// BitrateKbps is the constant bit rate in kbit/s. Zero picks 16 kbps
	// per channel below 16 kHz, 32 per channel up to 24 kHz and 64 per
	// channel above.
	BitrateKbps int
}

// MPEG-1 Layer III carries 32, 44.1 and 48 kHz; MPEG-2 16, 22.05 and 24 kHz;
// MPEG-2.5 8, 11.025 and 12 kHz. Each version has its own bit rates
// (ISO/IEC 11172-3 and 13818-3 tables).
var (
	mpeg1Bitrates = []int{32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320}
	mpeg2Bitrates = []int{8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160}
)

// isMPEG1 reports whether rate is carried by MPEG-1; ok is false for rates
// no MPEG version carries.
func isMPEG1(rate int) (mpeg1, ok bool) {
	switch rate {
	case 32000, 44100, 48000:
		return true, true
	case 8000, 11025, 12000, 16000, 22050, 24000:
		return false, true
	}
	return false, false
}

// withDefaults validates cfg and fills in the default bit rate.
func (cfg Config) withDefaults() (Config, error) {
	mpeg1, ok := isMPEG1(cfg.SampleRate)
	if !ok {
		return cfg, fmt.Errorf("%d Hz: %w", cfg.SampleRate, ErrSampleRate)
	}
	if cfg.Channels != 1 && cfg.Channels != 2 {
		return cfg, fmt.Errorf("%d channels: %w", cfg.Channels, ErrChannels)
	}
	if cfg.BitrateKbps == 0 {
		switch {
		case cfg.SampleRate < 16000:
			cfg.BitrateKbps = 16 * cfg.Channels
		case cfg.SampleRate <= 24000:
			cfg.BitrateKbps = 32 * cfg.Channels
		default:
			cfg.BitrateKbps = 64 * cfg.Channels
		}
	}
	allowed := mpeg2Bitrates
	if mpeg1 {
		allowed = mpeg1Bitrates
	}
	if !slices.Contains(allowed, cfg.BitrateKbps) {
		return cfg, fmt.Errorf("%d kbps at %d Hz (allowed %v): %w", cfg.BitrateKbps, cfg.SampleRate, allowed, ErrBitrate)
	}
	return cfg, nil
}

// chunkFrames bounds the frames handed to LAME per call, so the output
// space reserved per call stays small (LAME wants 1.25 n + 7200 bytes).
const chunkFrames = 4608

// flushSpace is the output space lame_encode_flush may need.
const flushSpace = 7200

// Encoder turns PCM into MP3 frames. It holds a libmp3lame context, so it
// must be closed. It is not safe for concurrent use.
type Encoder struct {
	gfp     *C.lame_global_flags
	cfg     Config
	cleanup runtime.Cleanup
	flushed bool
}

// NewEncoder validates cfg and prepares a LAME encoder for it.
func NewEncoder(cfg Config) (*Encoder, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	gfp := C.lame_init()
	if gfp == nil {
		return nil, fmt.Errorf("lame_init: %w", ErrLAME)
	}
	mode := C.MPEG_mode(C.MONO)
	if cfg.Channels == 2 {
		mode = C.JOINT_STEREO
	}
	C.lame_set_in_samplerate(gfp, C.int(cfg.SampleRate))
	C.lame_set_out_samplerate(gfp, C.int(cfg.SampleRate))
	C.lame_set_num_channels(gfp, C.int(cfg.Channels))
	C.lame_set_mode(gfp, mode)
	C.lame_set_VBR(gfp, C.vbr_off)
	C.lame_set_brate(gfp, C.int(cfg.BitrateKbps))
	C.lame_set_quality(gfp, 5) // LAME's "-q 5": good speed/quality balance for speech
	// No Xing/Info frame (it needs a seek back to the start) and no ID3.
	C.lame_set_bWriteVbrTag(gfp, 0)
	C.lame_set_write_id3tag_automatic(gfp, 0)
	if rc := C.lame_init_params(gfp); rc < 0 {
		C.lame_close(gfp)
		return nil, fmt.Errorf("lame_init_params for %+v returned %d: %w", cfg, int(rc), ErrLAME)
	}
	if got := int(C.lame_get_brate(gfp)); got != cfg.BitrateKbps {
		C.lame_close(gfp)
		return nil, fmt.Errorf("libmp3lame chose %d kbps for %+v: %w", got, cfg, ErrBitrate)
	}
	e := &Encoder{gfp: gfp, cfg: cfg}
	// A forgotten Close must not leak the C context.
	e.cleanup = runtime.AddCleanup(e, func(p *C.lame_global_flags) { C.lame_close(p) }, gfp)
	return e, nil
}

// Config returns the configuration in use, defaults filled in.
func (e *Encoder) Config() Config {
	return e.cfg
}

// Encode appends to dst the MP3 bytes LAME produces for pcm (interleaved
// for stereo) and returns the extended slice. LAME buffers about one frame
// of audio, so output lags input and a call may return no new bytes. With a
// dst whose capacity is reused, it does not allocate.
func (e *Encoder) Encode(dst []byte, pcm []int16) ([]byte, error) {
	if err := e.usable(); err != nil {
		return dst, err
	}
	if len(pcm)%e.cfg.Channels != 0 {
		return dst, fmt.Errorf("%d samples for %d channels: %w", len(pcm), e.cfg.Channels, ErrPartialFrame)
	}
	for len(pcm) > 0 {
		frames := min(len(pcm)/e.cfg.Channels, chunkFrames)
		space := frames*5/4 + 7200
		dst = slices.Grow(dst, space)
		out := dst[len(dst):cap(dst)]
		in := (*C.short)(unsafe.Pointer(&pcm[0]))
		outPtr := (*C.uchar)(unsafe.Pointer(&out[0]))
		var n C.int
		if e.cfg.Channels == 2 {
			n = C.lame_encode_buffer_interleaved(e.gfp, in, C.int(frames), outPtr, C.int(len(out)))
		} else {
			n = C.lame_encode_buffer(e.gfp, in, nil, C.int(frames), outPtr, C.int(len(out)))
		}
		runtime.KeepAlive(pcm)
		if n < 0 {
			return dst, fmt.Errorf("lame_encode_buffer returned %d: %w", int(n), ErrLAME)
		}
		dst = dst[:len(dst)+int(n)]
		pcm = pcm[frames*e.cfg.Channels:]
	}
	return dst, nil
}

// Flush pads the buffered audio to a whole frame, appends the final MP3
// frames to dst and ends the stream: later Encode and Flush calls return
// ErrFlushed. Close must still be called.
func (e *Encoder) Flush(dst []byte) ([]byte, error) {
	if err := e.usable(); err != nil {
		return dst, err
	}
	e.flushed = true
	dst = slices.Grow(dst, flushSpace)
	out := dst[len(dst):cap(dst)]
	n := C.lame_encode_flush(e.gfp, (*C.uchar)(unsafe.Pointer(&out[0])), C.int(len(out)))
	if n < 0 {
		return dst, fmt.Errorf("lame_encode_flush returned %d: %w", int(n), ErrLAME)
	}
	return dst[:len(dst)+int(n)], nil
}

// Close frees the LAME context. It is safe to call more than once.
func (e *Encoder) Close() error {
	if e.gfp == nil {
		return nil
	}
	e.cleanup.Stop()
	C.lame_close(e.gfp)
	e.gfp = nil
	return nil
}

func (e *Encoder) usable() error {
	switch {
	case e.gfp == nil:
		return ErrClosed
	case e.flushed:
		return ErrFlushed
	}
	return nil
}

// EncodeAll encodes a whole buffer of PCM (interleaved for stereo) to a
// complete MP3 stream.
func EncodeAll(cfg Config, pcm []int16) ([]byte, error) {
	e, err := NewEncoder(cfg)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	// CBR: the output size is known up to a frame or two.
	est := len(pcm)/e.cfg.Channels*e.cfg.BitrateKbps*125/e.cfg.SampleRate + 2*flushSpace
	out, err := e.Encode(make([]byte, 0, est), pcm)
	if err != nil {
		return nil, err
	}
	return e.Flush(out)
}
