package audio

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/voiced/voiced/codecs/g711"
	"github.com/voiced/voiced/codecs/opus"
	"github.com/voiced/voiced/codecs/wav"
)

func defaultSource(t *testing.T, gap time.Duration) *Source {
	t.Helper()
	pcm, rate, err := DefaultPrompt()
	require.NoError(t, err)
	require.Equal(t, 16000, rate)
	s, err := NewSource(pcm, rate, gap)
	require.NoError(t, err)
	return s
}

func onsetTime(s *Source, rate int) time.Duration {
	f, n := s.Onset(rate)
	got := time.Duration(f)*Frame + time.Duration(n)*time.Second/time.Duration(rate)
	if got != s.OnsetTime(rate) {
		panic("Onset and OnsetTime disagree")
	}
	return got
}

func TestSourceShape(t *testing.T) {
	s := defaultSource(t, time.Second)
	// 2.856 s of prompt + 1 s, rounded up to 20 ms frames.
	require.Equal(t, 193, s.CycleFrames())
	require.Equal(t, 193*Frame, s.Cycle())
	for _, r := range Rates {
		require.Len(t, s.PCM(r), 193*r/50, "rate %d", r)
	}
	// The wideband rates start speaking at the same moment (within 1 ms:
	// the resampler's delay is removed); at 8 kHz the band-limited rise
	// crosses the threshold a few ms later.
	ref := onsetTime(s, 16000)
	require.Greater(t, ref, time.Duration(0))
	for _, r := range Rates[1:] {
		require.InDelta(t, ref.Seconds(), onsetTime(s, r).Seconds(), 0.001, "rate %d", r)
	}
	require.InDelta(t, ref.Seconds()+0.003, onsetTime(s, 8000).Seconds(), 0.003)
	require.Greater(t, s.SpeechEnd(), ref+2*time.Second)
	require.Less(t, s.SpeechEnd(), 2856*time.Millisecond)
}

func TestOnsetOncePerCycle(t *testing.T) {
	s := defaultSource(t, 2*time.Second)
	pcm := s.PCM(8000)
	d := NewOnset(8000)
	var at []int
	for c := range 3 {
		for i := 0; i < len(pcm); i += 160 {
			if k := d.Feed(pcm[i : i+160]); k >= 0 {
				at = append(at, c*len(pcm)+i+k)
			}
		}
	}
	f, n := s.Onset(8000)
	first := f*160 + n
	require.Equal(t, []int{first, len(pcm) + first, 2*len(pcm) + first}, at)
}

func TestOnsetSynthetic(t *testing.T) {
	d := NewOnset(8000)
	frame := make([]int16, 160)
	require.Equal(t, -1, d.Feed(frame))
	frame[37] = 2000
	require.Equal(t, 37, d.Feed(frame), "the stream starts as if after silence")
	frame[37] = 0
	frame[5] = -3000
	require.Equal(t, -1, d.Feed(frame), "20 ms of quiet is not enough")
	quiet := make([]int16, 160)
	for range 20 { // 400 ms
		require.Equal(t, -1, d.Feed(quiet))
	}
	require.Equal(t, 5, d.Feed(frame))
}

func TestFramesPCMU(t *testing.T) {
	s := defaultSource(t, time.Second)
	frames, err := s.Frames("PCMU")
	require.NoError(t, err)
	require.Len(t, frames, s.CycleFrames())
	again, err := s.Frames("pcmu")
	require.NoError(t, err)
	require.Same(t, &frames[0][0], &again[0][0], "encoded once and shared")
	// Decoding gives the source within µ-law quantization.
	pcm := s.PCM(8000)
	dec := make([]int16, 160)
	for i, f := range frames {
		require.Len(t, f, 160)
		g711.DecodeULawTo(dec, f)
		for j, v := range dec {
			want := float64(pcm[i*160+j])
			require.InDelta(t, want, float64(v), math.Abs(want)/16+16)
		}
	}
	a, err := s.Frames("PCMA")
	require.NoError(t, err)
	require.NotEqual(t, frames[100], a[100])
	_, err = s.Frames("G729")
	require.ErrorIs(t, err, ErrCodec)
}

func TestFramesOpusKeepOnset(t *testing.T) {
	s := defaultSource(t, time.Second)
	frames, err := s.Frames("opus")
	require.NoError(t, err)
	require.Len(t, frames, s.CycleFrames())
	dec, err := opus.NewDecoder(8000, 1)
	require.NoError(t, err)
	d := NewOnset(8000)
	pcm := make([]int16, 160)
	found := -1
	for i, f := range frames {
		n, err := dec.DecodeTo(pcm, f)
		require.NoError(t, err)
		if k := d.Feed(pcm[:n]); k >= 0 && found < 0 {
			found = i*160 + k
		}
	}
	require.GreaterOrEqual(t, found, 0)
	got := time.Duration(found) * time.Second / 8000
	// Decoded at 8 kHz it matches the 8 kHz source plus Opus's 6.5 ms
	// lookahead.
	require.InDelta(t, (onsetTime(s, 8000) + 6500*time.Microsecond).Seconds(), got.Seconds(), 0.001)
}

func TestReadPromptAndSilence(t *testing.T) {
	dir := t.TempDir()
	stereo := make([]int16, 2*8000)
	for i := range 8000 {
		v := int16(0)
		if i > 4000 {
			v = int16(8000 * math.Sin(float64(i)/5))
		}
		stereo[2*i], stereo[2*i+1] = v, v
	}
	b, err := wav.Encode(wav.Format{Encoding: wav.PCM16, SampleRate: 8000, Channels: 2}, stereo)
	require.NoError(t, err)
	path := filepath.Join(dir, "p.wav")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	pcm, rate, err := ReadPrompt(path)
	require.NoError(t, err)
	require.Equal(t, 8000, rate)
	require.Len(t, pcm, 8000)
	s, err := NewSource(pcm, rate, 0)
	require.NoError(t, err)
	require.Equal(t, 50, s.CycleFrames())
	require.InDelta(t, 0.5, onsetTime(s, 8000).Seconds(), 0.002)

	_, err = NewSource(make([]int16, 8000), 8000, 0)
	require.ErrorIs(t, err, ErrSilent)
	_, err = NewSource(pcm, 11025, 0)
	require.ErrorIs(t, err, ErrRate)
	_, _, err = ReadPrompt(filepath.Join(dir, "missing.wav"))
	require.Error(t, err)
}

func TestOnsetAllocatesNothing(t *testing.T) {
	d := NewOnset(8000)
	frame := make([]int16, 160)
	require.Zero(t, testing.AllocsPerRun(100, func() { d.Feed(frame) }))
}
