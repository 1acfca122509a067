package opus

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNoAllocs guards the per-frame paths: EncodeTo, DecodeTo, DecodeFECTo
// and ConcealTo allocate nothing in steady state.
func TestNoAllocs(t *testing.T) {
	for _, rate := range []int{16000, 48000} {
		frame := rate / 50
		e, err := NewEncoder(EncoderConfig{SampleRate: rate, FEC: true, DTX: true})
		require.NoError(t, err)
		pcm := voice(rate, rate)
		pkts := encodeAll(t, e, pcm)
		d := mustDecoder(t, rate)
		buf, out := make([]byte, MaxPacketSize), make([]int16, frame)
		i := 0
		require.Zero(t, testing.AllocsPerRun(100, func() {
			i = (i + 1) % 50
			if _, err := e.EncodeTo(buf, pcm[i*frame:(i+1)*frame]); err != nil {
				t.Fatal(err)
			}
		}), "EncodeTo")
		require.Zero(t, testing.AllocsPerRun(100, func() {
			i = (i + 1) % 50
			if _, err := d.DecodeTo(out, pkts[i]); err != nil {
				t.Fatal(err)
			}
		}), "DecodeTo")
		require.Zero(t, testing.AllocsPerRun(100, func() {
			i = (i + 1) % 50
			if _, err := d.DecodeFECTo(out, pkts[i]); err != nil {
				t.Fatal(err)
			}
		}), "DecodeFECTo")
		require.Zero(t, testing.AllocsPerRun(100, func() {
			if _, err := d.ConcealTo(out, frame); err != nil {
				t.Fatal(err)
			}
		}), "ConcealTo")
	}
}

func benchEncode(b *testing.B, rate int) {
	frame := rate / 50
	e, err := NewEncoder(EncoderConfig{SampleRate: rate, Complexity: 5})
	require.NoError(b, err)
	pcm := voice(rate, rate)
	buf := make([]byte, MaxPacketSize)
	b.ReportAllocs()
	b.SetBytes(int64(2 * frame))
	i, bytes := 0, 0
	for b.Loop() {
		n, err := e.EncodeTo(buf, pcm[i*frame:(i+1)*frame])
		if err != nil {
			b.Fatal(err)
		}
		bytes += n
		i = (i + 1) % 50
	}
	b.ReportMetric(float64(bytes)/float64(b.N), "packet-bytes")
}

func benchDecode(b *testing.B, rate int) {
	frame := rate / 50
	e, err := NewEncoder(EncoderConfig{SampleRate: rate, Complexity: 5})
	require.NoError(b, err)
	pkts := encodeAll(b, e, voice(rate, rate))
	d := mustDecoder(b, rate)
	out := make([]int16, frame)
	b.ReportAllocs()
	b.SetBytes(int64(2 * frame))
	i := 0
	for b.Loop() {
		if _, err := d.DecodeTo(out, pkts[i]); err != nil {
			b.Fatal(err)
		}
		i = (i + 1) % len(pkts)
	}
}

// BenchmarkOpusEncode16kC5 encodes one 20 ms voice frame at 16 kHz,
// complexity 5, 24 kb/s.
func BenchmarkOpusEncode16kC5(b *testing.B) { benchEncode(b, 16000) }

// BenchmarkOpusEncode48kC5 encodes one 20 ms voice frame at 48 kHz,
// complexity 5, 24 kb/s.
func BenchmarkOpusEncode48kC5(b *testing.B) { benchEncode(b, 48000) }

// BenchmarkOpusDecode16k decodes one 20 ms packet to 16 kHz.
func BenchmarkOpusDecode16k(b *testing.B) { benchDecode(b, 16000) }

// BenchmarkOpusDecode48k decodes one 20 ms packet to 48 kHz.
func BenchmarkOpusDecode48k(b *testing.B) { benchDecode(b, 48000) }

// BenchmarkOpusConceal48k conceals one lost 20 ms frame at 48 kHz.
func BenchmarkOpusConceal48k(b *testing.B) {
	e, err := NewEncoder(EncoderConfig{SampleRate: 48000})
	require.NoError(b, err)
	pkts := encodeAll(b, e, voice(48000, 48000))
	d := mustDecoder(b, 48000)
	out := make([]int16, 960)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		// Alternate decode and loss so concealment never fades to silence.
		if _, err := d.DecodeTo(out, pkts[i]); err != nil {
			b.Fatal(err)
		}
		if _, err := d.ConcealTo(out, 960); err != nil {
			b.Fatal(err)
		}
		i = (i + 1) % len(pkts)
	}
}
