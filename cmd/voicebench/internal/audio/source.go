package audio

import (
	"bytes"
	_ "embed"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/voiced/voiced/codecs/g711"
	"github.com/voiced/voiced/codecs/opus"
	"github.com/voiced/voiced/codecs/resample"
	"github.com/voiced/voiced/codecs/wav"
)

//go:embed prompt.wav
var promptWAV []byte

// Frame is the packetization interval of every stream voicebench sends.
const Frame = 20 * time.Millisecond

// Rates are the rates a Source is prepared at: G.711, wideband PCM
// (WebSocket), 24 kHz PCM (WebSocket), Opus.
var Rates = []int{8000, 16000, 24000, 48000}

// Source is the audio every call sends: the prompt, then silence up to
// the cycle length, over and over. It is read-only once made and shared
// by every call.
type Source struct {
	cycle  int // frames per cycle
	pcm    map[int][]int16
	onset  map[int]int // sample index of the first onset in the cycle, per rate
	speech map[int]int // sample index just after the last loud sample
	frames map[string][][]byte
}

// DefaultPrompt returns the embedded prompt (16 kHz mono).
func DefaultPrompt() (samples []int16, rate int, err error) {
	return readWAV(bytes.NewReader(promptWAV))
}

// ReadPrompt reads a WAV file (PCM16, A-law or µ-law; stereo is mixed to
// mono) at 8, 16, 22.05, 24, 44.1 or 48 kHz.
func ReadPrompt(path string) ([]int16, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	s, rate, err := readWAV(f)
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", path, err)
	}
	return s, rate, nil
}

func readWAV(r io.Reader) ([]int16, int, error) {
	f, s, err := wav.ReadAll(r)
	if err != nil {
		return nil, 0, err
	}
	if f.Channels == 2 {
		mono := make([]int16, len(s)/2)
		for i := range mono {
			mono[i] = int16((int32(s[2*i]) + int32(s[2*i+1])) / 2)
		}
		s = mono
	}
	return s, f.SampleRate, nil
}

// NewSource prepares pcm (at rate Hz) followed by gap of silence as one
// cycle, at every rate in Rates. The cycle is rounded up to whole frames.
func NewSource(pcm []int16, rate int, gap time.Duration) (*Source, error) {
	s := &Source{pcm: map[int][]int16{}, onset: map[int]int{}, speech: map[int]int{}, frames: map[string][][]byte{}}
	dur := time.Duration(len(pcm))*time.Second/time.Duration(rate) + max(gap, 0)
	s.cycle = int((dur + Frame - 1) / Frame)
	for _, out := range Rates {
		conv, err := convert(pcm, rate, out)
		if err != nil {
			return nil, err
		}
		n := s.cycle * out / 50
		cyc := make([]int16, n)
		copy(cyc, conv)
		on, end := span(cyc, out)
		if on < 0 {
			return nil, ErrSilent
		}
		s.pcm[out], s.onset[out], s.speech[out] = cyc, on, end
	}
	return s, nil
}

// convert resamples a whole prompt; the resampler's group delay is
// trimmed so every rate starts speaking at the same time.
func convert(pcm []int16, in, out int) ([]int16, error) {
	if in == out {
		return append([]int16(nil), pcm...), nil
	}
	r, err := resample.New(in, out, resample.QualityHigh)
	if err != nil {
		return nil, fmt.Errorf("%w: %d to %d Hz: %v", ErrRate, in, out, err)
	}
	defer r.Close()
	// One call for the whole prompt, then Flush for the samples still in
	// the filter; dropping the first Delay() samples aligns the output
	// with the input.
	dst := make([]int16, r.OutputLen(len(pcm))+r.Delay())
	n, err := r.ProcessTo(dst, pcm)
	if err != nil {
		return nil, fmt.Errorf("resample %d to %d Hz: %w", in, out, err)
	}
	m, err := r.Flush(dst[n : n+r.Delay()])
	if err != nil {
		return nil, fmt.Errorf("resample %d to %d Hz: %w", in, out, err)
	}
	return dst[r.Delay() : n+m], nil
}

// span finds the first onset and the end of speech in one cycle at rate.
func span(cyc []int16, rate int) (onset, end int) {
	d := NewOnset(rate)
	onset, end = -1, -1
	for i, v := range cyc {
		if abs(v) >= Threshold {
			end = i + 1
		}
		if onset < 0 && d.feedSample(v) {
			onset = i
		}
	}
	return onset, end
}

// CycleFrames returns the number of 20 ms frames in one cycle.
func (s *Source) CycleFrames() int { return s.cycle }

// Cycle returns the length of one cycle.
func (s *Source) Cycle() time.Duration { return time.Duration(s.cycle) * Frame }

// PCM returns one cycle at rate (one of Rates); the slice is shared and
// must not be modified.
func (s *Source) PCM(rate int) []int16 { return s.pcm[rate] }

// Onset returns where the prompt starts speaking within a cycle at rate:
// the frame index and the sample within that frame. Band-limiting moves
// the threshold crossing: the 8 kHz version crosses about 5 ms after the
// wideband ones, so a receiver compares against the onset at the rate it
// detects at.
func (s *Source) Onset(rate int) (frame, sample int) {
	n := rate / 50
	return s.onset[rate] / n, s.onset[rate] % n
}

// OnsetTime returns Onset as a time from the start of a cycle.
func (s *Source) OnsetTime(rate int) time.Duration {
	return time.Duration(s.onset[rate]) * time.Second / time.Duration(rate)
}

// SpeechEnd returns when, from the start of a cycle, the prompt's last
// loud sample ends.
func (s *Source) SpeechEnd() time.Duration {
	return time.Duration(s.speech[8000]) * time.Second / 8000
}

// Frames returns one cycle encoded as 20 ms RTP payloads for codec
// ("PCMU", "PCMA" at 8 kHz or "opus" at 48 kHz), computed once and shared.
// It is not safe to call concurrently with itself.
func (s *Source) Frames(codec string) ([][]byte, error) {
	key := strings.ToLower(codec)
	if f, ok := s.frames[key]; ok {
		return f, nil
	}
	var out [][]byte
	switch key {
	case "pcmu", "pcma":
		pcm := s.pcm[8000]
		for i := range s.cycle {
			p := make([]byte, 160)
			if key == "pcmu" {
				g711.EncodeULawTo(p, pcm[i*160:(i+1)*160])
			} else {
				g711.EncodeALawTo(p, pcm[i*160:(i+1)*160])
			}
			out = append(out, p)
		}
	case "opus":
		enc, err := opus.NewEncoder(opus.EncoderConfig{SampleRate: 48000})
		if err != nil {
			return nil, err
		}
		pcm := s.pcm[48000]
		buf := make([]byte, opus.MaxPacketSize)
		// Encode the cycle twice and keep the second pass, so the first
		// frame carries the encoder state of a cycle that came before.
		for pass := range 2 {
			for i := range s.cycle {
				n, err := enc.EncodeTo(buf, pcm[i*960:(i+1)*960])
				if err != nil {
					return nil, fmt.Errorf("encode opus: %w", err)
				}
				if pass == 1 {
					out = append(out, append([]byte(nil), buf[:n]...))
				}
			}
		}
	default:
		return nil, fmt.Errorf("%w %q", ErrCodec, codec)
	}
	s.frames[key] = out
	return out, nil
}

func abs(v int16) int32 {
	if v < 0 {
		return -int32(v)
	}
	return int32(v)
}
