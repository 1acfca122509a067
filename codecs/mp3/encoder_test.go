package mp3

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// sine returns seconds of a sine at hz on every channel, at -6 dBFS.
func sine(rate, channels int, hz, seconds float64) []int16 {
	n := int(float64(rate) * seconds)
	s := make([]int16, n*channels)
	for i := range n {
		v := int16(16384 * math.Sin(2*math.Pi*hz*float64(i)/float64(rate)))
		for c := range channels {
			s[i*channels+c] = v
		}
	}
	return s
}

func TestEncodeToneFrames(t *testing.T) {
	for _, tc := range []struct {
		cfg     Config
		version string
		kbps    int
	}{
		{Config{SampleRate: 8000, Channels: 1}, "2.5", 16},
		{Config{SampleRate: 16000, Channels: 1, BitrateKbps: 32}, "2", 32},
		{Config{SampleRate: 24000, Channels: 2}, "2", 64},
		{Config{SampleRate: 44100, Channels: 2, BitrateKbps: 128}, "1", 128},
		{Config{SampleRate: 48000, Channels: 1, BitrateKbps: 64}, "1", 64},
	} {
		t.Run(fmt.Sprintf("%d_%dch_%dkbps", tc.cfg.SampleRate, tc.cfg.Channels, tc.kbps), func(t *testing.T) {
			mp3, err := EncodeAll(tc.cfg, sine(tc.cfg.SampleRate, tc.cfg.Channels, 440, 1))
			require.NoError(t, err)
			frames, err := parseStream(mp3)
			require.NoError(t, err)
			require.NotEmpty(t, frames)
			for i, h := range frames {
				require.Equal(t, tc.version, h.version, "frame %d", i)
				require.Equal(t, tc.kbps, h.bitrate, "frame %d: constant bit rate", i)
				require.Equal(t, tc.cfg.SampleRate, h.sampleRate, "frame %d", i)
				require.Equal(t, tc.cfg.Channels == 1, h.mono, "frame %d", i)
			}
			// Duration from the frame count: one second of audio plus
			// LAME's encoder delay and the padding of the last frame, which
			// stays under three frames.
			perFrame := frames[0].samples
			dur := float64(len(frames)*perFrame) / float64(tc.cfg.SampleRate)
			require.GreaterOrEqual(t, dur, 1.0)
			require.Less(t, dur, 1.0+3*float64(perFrame)/float64(tc.cfg.SampleRate))
			// CBR: the stream's size matches the bit rate.
			require.InDelta(t, float64(tc.kbps)*1000/8*dur, float64(len(mp3)), float64(len(frames)), "bytes for %.3f s", dur)
		})
	}
}

func TestStreamingMatchesEncodeAll(t *testing.T) {
	cfg := Config{SampleRate: 16000, Channels: 2, BitrateKbps: 48}
	pcm := sine(16000, 2, 440, 1.3)
	want, err := EncodeAll(cfg, pcm)
	require.NoError(t, err)

	e, err := NewEncoder(cfg)
	require.NoError(t, err)
	defer e.Close()
	require.Equal(t, cfg, e.Config())
	var got []byte
	for rest := pcm; len(rest) > 0; {
		n := min(len(rest), 640) // 20 ms of stereo
		got, err = e.Encode(got, rest[:n])
		require.NoError(t, err)
		rest = rest[n:]
	}
	got, err = e.Flush(got)
	require.NoError(t, err)
	require.Equal(t, want, got, "chunking the input does not change the stream")

	_, err = e.Encode(nil, pcm[:2])
	require.ErrorIs(t, err, ErrFlushed)
	_, err = e.Flush(nil)
	require.ErrorIs(t, err, ErrFlushed)
	require.NoError(t, e.Close())
	require.NoError(t, e.Close(), "Close is idempotent")
	_, err = e.Encode(nil, pcm[:2])
	require.ErrorIs(t, err, ErrClosed)
}

func TestEncodeEmptyAndSilence(t *testing.T) {
	out, err := EncodeAll(Config{SampleRate: 8000, Channels: 1}, nil)
	require.NoError(t, err)
	frames, err := parseStream(out)
	require.NoError(t, err)
	require.LessOrEqual(t, len(frames), 3, "empty input gives at most the delay frames")

	out, err = EncodeAll(Config{SampleRate: 8000, Channels: 1}, make([]int16, 8000))
	require.NoError(t, err)
	_, err = parseStream(out)
	require.NoError(t, err)
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want error
	}{
		{Config{SampleRate: 7000, Channels: 1}, ErrSampleRate},
		{Config{SampleRate: 96000, Channels: 1}, ErrSampleRate},
		{Config{SampleRate: 0, Channels: 1}, ErrSampleRate},
		{Config{SampleRate: 8000, Channels: 0}, ErrChannels},
		{Config{SampleRate: 8000, Channels: 3}, ErrChannels},
		{Config{SampleRate: 16000, Channels: 1, BitrateKbps: 33}, ErrBitrate},
		{Config{SampleRate: 16000, Channels: 1, BitrateKbps: 320}, ErrBitrate},
		{Config{SampleRate: 48000, Channels: 1, BitrateKbps: 8}, ErrBitrate},
		{Config{SampleRate: 48000, Channels: 1, BitrateKbps: -64}, ErrBitrate},
	} {
		t.Run(fmt.Sprintf("%+v", tc.cfg), func(t *testing.T) {
			e, err := NewEncoder(tc.cfg)
			require.ErrorIs(t, err, tc.want)
			require.Nil(t, e)
			_, err = EncodeAll(tc.cfg, make([]int16, 10))
			require.ErrorIs(t, err, tc.want)
		})
	}
}

func TestStereoNeedsWholeFrames(t *testing.T) {
	e, err := NewEncoder(Config{SampleRate: 44100, Channels: 2})
	require.NoError(t, err)
	defer e.Close()
	_, err = e.Encode(nil, make([]int16, 3))
	require.ErrorIs(t, err, ErrPartialFrame)
}

func TestEncodeDoesNotAllocate(t *testing.T) {
	e, err := NewEncoder(Config{SampleRate: 16000, Channels: 1, BitrateKbps: 32})
	require.NoError(t, err)
	defer e.Close()
	frame := sine(16000, 1, 440, 0.02)
	buf := make([]byte, 0, 16<<10)
	var encErr error
	allocs := testing.AllocsPerRun(200, func() {
		var err error
		if _, err = e.Encode(buf[:0], frame); err != nil {
			encErr = err
		}
	})
	require.NoError(t, encErr)
	require.Zero(t, allocs)
}
