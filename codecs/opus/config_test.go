package opus

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEncoderConfig(t *testing.T) {
	e, err := NewEncoder(EncoderConfig{})
	require.NoError(t, err)
	require.Equal(t, EncoderConfig{SampleRate: 48000, Channels: 1, Bitrate: DefaultBitrate, Complexity: DefaultComplexity}, e.Config())

	e, err = NewEncoder(EncoderConfig{SampleRate: 16000, FEC: true})
	require.NoError(t, err)
	require.Equal(t, DefaultPacketLossPercent, e.Config().PacketLossPercent, "FEC needs a loss figure")
	fec, err := e.enc.InBandFEC()
	require.NoError(t, err)
	require.True(t, fec)

	for _, tc := range []struct {
		name string
		cfg  EncoderConfig
		is   error
		msg  string
	}{
		{"rate 8000", EncoderConfig{SampleRate: 8000}, ErrUnsupportedRate, "8000 Hz"},
		{"rate 44100", EncoderConfig{SampleRate: 44100}, ErrUnsupportedRate, "44100 Hz"},
		{"stereo", EncoderConfig{Channels: 2}, ErrUnsupportedChannels, "2"},
		{"bitrate", EncoderConfig{Bitrate: 1000}, ErrBadConfig, "bitrate 1000"},
		{"complexity", EncoderConfig{Complexity: 11}, ErrBadConfig, "complexity 11"},
		{"loss", EncoderConfig{PacketLossPercent: 101}, ErrBadConfig, "101%"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := NewEncoder(tc.cfg)
			require.Nil(t, e)
			require.ErrorIs(t, err, tc.is)
			require.ErrorContains(t, err, tc.msg)
		})
	}

	e, err = NewEncoder(EncoderConfig{})
	require.NoError(t, err)
	require.NoError(t, e.SetBitrate(40000))
	got, err := e.enc.Bitrate()
	require.NoError(t, err)
	require.Equal(t, 40000, got)
	require.ErrorIs(t, e.SetBitrate(5), ErrBadConfig)
	require.NoError(t, e.SetPacketLossPercent(15))
	require.Equal(t, 15, e.Config().PacketLossPercent)
	require.ErrorIs(t, e.SetPacketLossPercent(-1), ErrBadConfig)
}

func TestNewDecoderErrors(t *testing.T) {
	_, err := NewDecoder(44100, 1)
	require.ErrorIs(t, err, ErrUnsupportedRate)
	require.ErrorContains(t, err, "44100 Hz")
	_, err = NewDecoder(48000, 3)
	require.ErrorIs(t, err, ErrUnsupportedChannels)
	require.ErrorContains(t, err, "3")
}

// TestFrameSizes checks that every Opus frame duration encodes and that other
// lengths, and bad loss lengths, are refused with the sizes named.
func TestFrameSizes(t *testing.T) {
	for _, rate := range []int{16000, 48000} {
		e, err := NewEncoder(EncoderConfig{SampleRate: rate})
		require.NoError(t, err)
		d := mustDecoder(t, rate)
		buf, pcm := make([]byte, MaxPacketSize), make([]int16, 5760)
		for _, ms10 := range []int{25, 50, 100, 200, 400, 600} { // tenths of ms
			n := rate * ms10 / 10000
			k, err := e.EncodeTo(buf, sine(300, 8000, rate, n))
			require.NoError(t, err, "%d samples", n)
			got, err := d.DecodeTo(pcm, buf[:k])
			require.NoError(t, err)
			require.Equal(t, n, got)
		}
		_, err = e.EncodeTo(buf, make([]int16, rate/50+1))
		require.ErrorIs(t, err, ErrFrameSize)
		require.ErrorContains(t, err, "want 2.5, 5, 10, 20, 40 or 60 ms")
		_, err = e.EncodeTo(buf, nil)
		require.ErrorIs(t, err, ErrFrameSize)
		_, err = e.EncodeTo(buf[:2], make([]int16, rate/50))
		require.ErrorIs(t, err, ErrShortBuffer)

		_, err = d.ConcealTo(pcm, rate/50+1)
		require.ErrorIs(t, err, ErrFrameSize)
		_, err = d.ConcealTo(pcm, 0)
		require.ErrorIs(t, err, ErrFrameSize)
		_, err = d.ConcealTo(pcm[:10], rate/50)
		require.ErrorIs(t, err, ErrShortBuffer)
		_, err = d.DecodeFECTo(pcm[:rate/50+3], buf[:3])
		require.ErrorIs(t, err, ErrFrameSize)
		_, err = d.DecodeFECTo(pcm[:rate/50], nil)
		require.ErrorIs(t, err, ErrEmptyPacket)
	}
}

// TestStereoDecoderAndReset decodes a mono packet on a stereo decoder (both
// channels carry it) and checks Reset gives a decoder as new.
func TestStereoDecoderAndReset(t *testing.T) {
	e, err := NewEncoder(EncoderConfig{SampleRate: 48000})
	require.NoError(t, err)
	pkts := encodeAll(t, e, voice(48000, 48000/5))
	d, err := NewDecoder(48000, 2)
	require.NoError(t, err)
	dst := make([]int16, 2*960)
	n, err := d.DecodeTo(dst, pkts[5])
	require.NoError(t, err)
	require.Equal(t, 960, n)
	for i := range n {
		require.Equal(t, dst[2*i], dst[2*i+1])
	}
	_, err = d.DecodeTo(dst[:1000], pkts[6])
	require.ErrorIs(t, err, ErrShortBuffer)

	m := mustDecoder(t, 48000)
	want := decodeAll(t, m, pkts[:3])
	decodeAll(t, m, pkts[3:])
	require.NoError(t, m.Reset())
	require.Equal(t, want, decodeAll(t, m, pkts[:3]))
}

// TestEncoderReset checks that Reset gives packets identical to a fresh
// encoder's.
func TestEncoderReset(t *testing.T) {
	pcm := voice(16000, 16000/5)
	cfg := EncoderConfig{SampleRate: 16000, FEC: true}
	fresh, err := NewEncoder(cfg)
	require.NoError(t, err)
	want := encodeAll(t, fresh, pcm)
	e, err := NewEncoder(cfg)
	require.NoError(t, err)
	encodeAll(t, e, voice(16000, 16000/3))
	require.NoError(t, e.Reset())
	require.Equal(t, want, encodeAll(t, e, pcm))
}

// TestLowDelayIsCELT checks LowDelay gives CELT-only packets (TOC configs
// 16-31) where VOIP mode codes speech with SILK (configs 0-11).
func TestLowDelayIsCELT(t *testing.T) {
	for _, low := range []bool{false, true} {
		e, err := NewEncoder(EncoderConfig{SampleRate: 16000, Complexity: 1, LowDelay: low})
		require.NoError(t, err)
		pcm := voice(16000, 16000)
		buf := make([]byte, MaxPacketSize)
		n, err := e.EncodeTo(buf, pcm[3200:3520])
		require.NoError(t, err)
		require.Greater(t, n, 2)
		config := buf[0] >> 3
		if low {
			require.GreaterOrEqual(t, config, byte(16), "CELT-only")
		} else {
			require.Less(t, config, byte(12), "SILK")
		}
	}
}
