package opus

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	hopus "github.com/hraban/opus"
	"github.com/stretchr/testify/require"
)

// toc builds a TOC byte: configuration 0..31, stereo flag, frame count code.
func toc(config byte, code byte) byte { return config<<3 | code }

func TestPacketSamples(t *testing.T) {
	for _, tc := range []struct {
		name   string
		packet []byte
		rate   int
		want   int
		err    string // substring of the error, "" for success
	}{
		{"silk 20ms code0", []byte{toc(1, 0), 1, 2, 3}, 48000, 960, ""},
		{"silk 60ms at 16k", []byte{toc(11, 0), 1}, 16000, 960, ""},
		{"hybrid 10ms", []byte{toc(12, 0), 1}, 48000, 480, ""},
		{"celt 2.5ms", []byte{toc(16, 0)}, 48000, 120, ""},
		{"toc only (DTX)", []byte{toc(9, 0)}, 16000, 320, ""},
		{"code1 two equal", []byte{toc(31, 1), 1, 2}, 48000, 1920, ""},
		{"code1 odd payload", []byte{toc(31, 1), 1, 2, 3}, 48000, 0, "not two equal frames"},
		{"code2", []byte{toc(31, 2), 2, 9, 9, 7}, 48000, 1920, ""},
		{"code2 first too long", []byte{toc(31, 2), 5, 9}, 48000, 0, "first frame of 5 bytes"},
		{"code2 truncated length", []byte{toc(31, 2)}, 48000, 0, "truncated in its frame length"},
		{"code2 two-byte length cut", []byte{toc(31, 2), 252}, 48000, 0, "truncated in its frame length"},
		{"code3 cbr 3 frames", []byte{toc(1, 3), 3, 1, 2, 3}, 48000, 2880, ""},
		{"code3 cbr uneven", []byte{toc(1, 3), 3, 1, 2}, 48000, 0, "not 3 equal frames"},
		{"code3 zero frames", []byte{toc(1, 3), 0}, 48000, 0, "declares 0 frames"},
		{"code3 no count", []byte{toc(1, 3)}, 48000, 0, "without its frame count"},
		{"code3 over 120ms", []byte{toc(3, 3), 3}, 48000, 0, "more than 120"},
		{"code3 120ms ok", []byte{toc(3, 3), 2}, 48000, 5760, ""},
		{"code3 padding", []byte{toc(1, 3), 0x40 | 1, 2, 7, 0, 0}, 48000, 960, ""},
		{"code3 padding too long", []byte{toc(1, 3), 0x40 | 1, 9, 7}, 48000, 0, "padding longer"},
		{"code3 padding cut", []byte{toc(1, 3), 0x40 | 1}, 48000, 0, "truncated in its padding"},
		{"code3 vbr", []byte{toc(1, 3), 0x80 | 2, 1, 5, 6, 6}, 48000, 1920, ""},
		{"code3 vbr lengths overflow", []byte{toc(1, 3), 0x80 | 3, 2, 2, 5, 6}, 48000, 0, "frame lengths exceed the packet"},
		{"code3 vbr one length too long", []byte{toc(1, 3), 0x80 | 2, 9, 5}, 48000, 0, "frame of 9 bytes exceeds the 1 left"},
		{"code0 oversized", append([]byte{toc(1, 0)}, make([]byte, 1276)...), 48000, 0, "exceeds 1275"},
		{"empty", nil, 48000, 0, "empty packet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PacketSamples(tc.packet, tc.rate)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			// libopus agrees on every valid case.
			d, err := hopus.NewDecoder(tc.rate, 1)
			require.NoError(t, err)
			n, err := d.Decode(tc.packet, make([]int16, 5760))
			require.NoError(t, err)
			require.Equal(t, tc.want, n)
		})
	}
}

// TestGarbagePackets decodes malformed and random packets: each gives an
// error naming the problem or decodes to a valid duration; nothing panics.
func TestGarbagePackets(t *testing.T) {
	d := mustDecoder(t, 48000)
	dst := make([]int16, 5760)
	for _, p := range [][]byte{
		{toc(1, 3), 0},
		{toc(31, 1), 1, 2, 3},
		{toc(1, 3), 0xff, 0xff, 0xff},
		{toc(1, 2), 253},
	} {
		_, err := d.DecodeTo(dst, p)
		require.ErrorIs(t, err, ErrInvalidPacket)
		require.Regexp(t, `code \d`, err.Error())
	}
	_, err := d.DecodeTo(dst, nil)
	require.ErrorIs(t, err, ErrEmptyPacket)

	rng := rand.New(rand.NewPCG(21, 22))
	ok, bad := 0, 0
	for range 3000 {
		p := make([]byte, 1+rng.IntN(200))
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		n, err := d.DecodeTo(dst, p)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidPacket)
			bad++
			continue
		}
		want, perr := PacketSamples(p, 48000)
		require.NoError(t, perr)
		require.Equal(t, want, n)
		ok++
	}
	t.Logf("random packets: %d decoded, %d rejected", ok, bad)
	require.NotZero(t, bad)
	require.NotZero(t, ok)
}

// TestDecodeShortBuffer checks that a dst shorter than the packet is refused
// with both sizes named and without touching libopus.
func TestDecodeShortBuffer(t *testing.T) {
	d := mustDecoder(t, 48000)
	_, err := d.DecodeTo(make([]int16, 959), []byte{toc(1, 0), 1})
	require.ErrorIs(t, err, ErrShortBuffer)
	require.ErrorContains(t, err, "959 samples for a packet of 960")
}

// FuzzOpusDecode checks on arbitrary packets that DecodeTo never panics, that
// its framing check agrees with libopus (a decoder fed the same packets
// straight through hraban/opus succeeds exactly when DecodeTo does, with the
// same length), and that FEC and concealment after it stay in bounds.
func FuzzOpusDecode(f *testing.F) {
	e, err := NewEncoder(EncoderConfig{SampleRate: 48000, FEC: true, DTX: true})
	require.NoError(f, err)
	for i, p := range encodeAll(f, e, append(voice(48000, 48000/5), make([]int16, 48000/2)...)) {
		if i%3 == 0 {
			f.Add(p)
		}
	}
	e16, err := NewEncoder(EncoderConfig{SampleRate: 16000, Bitrate: 12000})
	require.NoError(f, err)
	for _, p := range encodeAll(f, e16, voice(16000, 16000/10)) {
		f.Add(p)
	}
	for _, p := range [][]byte{
		{toc(1, 3), 0}, {toc(31, 1), 1, 2, 3}, {toc(1, 3), 0xff, 0xff, 0xff},
		{toc(1, 2), 253}, {toc(16, 0)}, {toc(3, 3), 0xc2, 255, 1, 9},
		bytes.Repeat([]byte{0xfc}, 1300),
	} {
		f.Add(p)
	}
	ours, err := NewDecoder(48000, 1)
	require.NoError(f, err)
	raw, err := hopus.NewDecoder(48000, 1)
	require.NoError(f, err)
	dst, rawDst := make([]int16, 5760), make([]int16, 5760)
	f.Fuzz(func(t *testing.T, p []byte) {
		n, err := ours.DecodeTo(dst, p)
		rn, rerr := 0, errors.New("empty")
		if len(p) > 0 {
			rn, rerr = raw.Decode(p, rawDst)
		}
		if (err == nil) != (rerr == nil) {
			t.Fatalf("DecodeTo err %v, libopus err %v for % x", err, rerr, p)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidPacket) && !errors.Is(err, ErrEmptyPacket) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if n != rn || n > len(dst) {
			t.Fatalf("DecodeTo %d samples, libopus %d", n, rn)
		}
		if _, err := ours.DecodeFECTo(dst[:960], p); err != nil {
			t.Fatalf("fec after a valid packet: %v", err)
		}
		if _, err := ours.ConcealTo(dst, 960); err != nil {
			t.Fatalf("conceal: %v", err)
		}
		// Keep the reference decoder's state in step.
		if err := raw.DecodeFEC(p, rawDst[:960]); err != nil {
			t.Fatalf("raw fec: %v", err)
		}
		if err := raw.DecodePLC(rawDst[:960]); err != nil {
			t.Fatalf("raw plc: %v", err)
		}
	})
}
