package media

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRates(t *testing.T) {
	require.Equal(t, 50, FramesPerSecond)
	require.Equal(t, time.Second, FrameDuration*time.Duration(FramesPerSecond))
	for rate, n := range map[int]int{8000: 160, 16000: 320, 24000: 480, 48000: 960} {
		require.NoError(t, ValidateRate(rate))
		require.Equal(t, n, SamplesPerFrame(rate))
		f, err := NewFrame(rate)
		require.NoError(t, err)
		require.Equal(t, rate, f.Rate)
		require.Len(t, f.Samples, n)
		require.True(t, f.Valid())
		f.Samples = f.Samples[1:]
		require.False(t, f.Valid(), "a short frame is not valid")
	}
	for _, rate := range []int{0, -8000, 1, 11025, 22050, 32000, 44100, 96000} {
		err := ValidateRate(rate)
		require.ErrorIs(t, err, ErrUnsupportedRate, "%d Hz", rate)
		require.Zero(t, SamplesPerFrame(rate))
		_, err = NewFrame(rate)
		require.ErrorIs(t, err, ErrUnsupportedRate)
		require.False(t, Frame{Rate: rate, Samples: make([]int16, 441)}.Valid())
	}
	require.ErrorContains(t, ValidateRate(44100), "44100 Hz")
}
