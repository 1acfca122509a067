package opus

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFECBeatsPLC loses every 7th packet of a voice-like stream and compares,
// on the lost frames only, the audio recovered from the next packet's FEC
// with plain concealment, both against the loss-free decode.
func TestFECBeatsPLC(t *testing.T) {
	for _, rate := range []int{16000, 48000} {
		t.Run(map[int]string{16000: "16k", 48000: "48k"}[rate], func(t *testing.T) {
			frame := rate / 50
			e, err := NewEncoder(EncoderConfig{SampleRate: rate, FEC: true, PacketLossPercent: 20})
			require.NoError(t, err)
			pkts := encodeAll(t, e, voice(rate, 2*rate))
			ref := decodeAll(t, mustDecoder(t, rate), pkts)

			plc, fec := mustDecoder(t, rate), mustDecoder(t, rate)
			buf := make([]int16, frame)
			var ePLC, eFEC, eRef float64
			lost := 0
			for i, p := range pkts {
				want := ref[i*frame : (i+1)*frame]
				if i%7 == 3 && i+1 < len(pkts) {
					n, err := plc.ConcealTo(buf, frame)
					require.NoError(t, err)
					require.Equal(t, frame, n)
					ePLC += diffEnergy(buf, want)
					n, err = fec.DecodeFECTo(buf, pkts[i+1])
					require.NoError(t, err)
					require.Equal(t, frame, n)
					eFEC += diffEnergy(buf, want)
					eRef += energy(want)
					lost++
					continue
				}
				for _, d := range []*Decoder{plc, fec} {
					_, err := d.DecodeTo(buf, p)
					require.NoError(t, err)
				}
			}
			t.Logf("%d lost frames: error energy vs reference, PLC %.1f dB, FEC %.1f dB", lost,
				10*math.Log10(ePLC/eRef), 10*math.Log10(eFEC/eRef))
			require.Less(t, eFEC, ePLC/2, "FEC must at least halve the error of PLC")
		})
	}
}

// TestConcealIsPlausible checks that concealment continues a steady voiced
// sound rather than going silent or blowing up: the first concealed frame
// keeps the level and the waveform of what was lost, and a long loss fades.
func TestConcealIsPlausible(t *testing.T) {
	const rate = 16000
	frame := rate / 50
	e, err := NewEncoder(EncoderConfig{SampleRate: rate})
	require.NoError(t, err)
	// A steady 200 Hz voiced sound: harmonics with a falling spectrum.
	pcm := make([]int16, rate)
	for i := range pcm {
		v := 0.0
		for h := 1; h <= 10; h++ {
			v += math.Sin(2*math.Pi*200*float64(h*i)/rate) / float64(h)
		}
		pcm[i] = int16(6000 * v)
	}
	pkts := encodeAll(t, e, pcm)
	ref := decodeAll(t, mustDecoder(t, rate), pkts)

	d := mustDecoder(t, rate)
	const at = 30
	decodeAll(t, d, pkts[:at])
	conceal := make([]int16, 5*frame)
	n, err := d.ConcealTo(conceal, 5*frame)
	require.NoError(t, err)
	require.Equal(t, 5*frame, n)

	first, want := conceal[:frame], ref[at*frame:(at+1)*frame]
	level := math.Sqrt(energy(first) / energy(want))
	corr := correlation(first, want)
	last := conceal[4*frame:]
	fade := math.Sqrt(energy(last) / energy(first))
	t.Logf("first concealed frame: level %.2f of the lost one, correlation %.3f; 5th frame level %.2f of the 1st", level, corr, fade)
	require.InDelta(t, 1, level, 0.5, "level of the first concealed frame")
	require.Greater(t, corr, 0.5, "waveform continues")
	require.Less(t, fade, 1.0, "long losses fade")
}

// TestDTXOnSilence feeds a second of voice then two of digital silence to an
// encoder with DTX and checks that silence turns into tiny packets (IsDTX)
// with InDTX set, interrupted only by comfort-noise updates that InDTX also
// covers, while voice never does.
func TestDTXOnSilence(t *testing.T) {
	for _, rate := range []int{16000, 48000} {
		t.Run(map[int]string{16000: "16k", 48000: "48k"}[rate], func(t *testing.T) {
			frame := rate / 50
			e, err := NewEncoder(EncoderConfig{SampleRate: rate, DTX: true})
			require.NoError(t, err)
			pcm := append(voice(rate, rate), make([]int16, 2*rate)...)
			buf := make([]byte, MaxPacketSize)
			var voiceDTX, silence, silenceDTX, tiny, silenceBytes int
			for i := 0; (i+1)*frame <= len(pcm); i++ {
				n, err := e.EncodeTo(buf, pcm[i*frame:(i+1)*frame])
				require.NoError(t, err)
				in := e.InDTX()
				if IsDTX(buf[:n]) {
					require.True(t, in, "frame %d: a %d-byte packet outside DTX", i, n)
				}
				if i < 50 {
					if in || IsDTX(buf[:n]) {
						voiceDTX++
					}
					continue
				}
				if i >= 60 { // past the encoder's 200 ms hangover
					silence++
					silenceBytes += n
					if in {
						silenceDTX++
					}
					if IsDTX(buf[:n]) {
						tiny++
					}
				}
			}
			t.Logf("silence: %d of %d frames in DTX, %d tiny packets, %.1f bytes per packet on average",
				silenceDTX, silence, tiny, float64(silenceBytes)/float64(silence))
			require.Zero(t, voiceDTX)
			require.Equal(t, silence, silenceDTX)
			require.Greater(t, tiny, silence*8/10)
		})
	}
	// Without DTX, silence is still sent as (small) full packets.
	e, err := NewEncoder(EncoderConfig{SampleRate: 16000})
	require.NoError(t, err)
	for _, p := range encodeAll(t, e, make([]int16, 16000)) {
		require.False(t, IsDTX(p))
	}
	require.False(t, e.InDTX())
}

func mustDecoder(t testing.TB, rate int) *Decoder {
	t.Helper()
	d, err := NewDecoder(rate, 1)
	require.NoError(t, err)
	return d
}
