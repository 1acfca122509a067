package wav

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/voiced/voiced/codecs/g711"
)

// expected returns what reading back samples written in enc must give:
// identical for PCM16, the G.711 quantized values otherwise.
func expected(enc Encoding, s []int16) []int16 {
	out := make([]int16, len(s))
	for i, v := range s {
		switch enc {
		case ULaw:
			out[i] = g711.DecodeULaw(g711.EncodeULaw(v))
		case ALaw:
			out[i] = g711.DecodeALaw(g711.EncodeALaw(v))
		default:
			out[i] = v
		}
	}
	return out
}

var roundTripFormats = []Format{
	{PCM16, 8000, 1}, {PCM16, 16000, 1}, {PCM16, 44100, 2}, {PCM16, 48000, 2},
	{ULaw, 8000, 1}, {ULaw, 8000, 2}, {ALaw, 8000, 1}, {ALaw, 16000, 2},
	{PCM16, 1, 1}, {ULaw, 192000, 2},
}

func TestEncodeReadAllRoundTrip(t *testing.T) {
	for _, f := range roundTripFormats {
		for _, frames := range []int{0, 1, 7, 160, 5000} {
			t.Run(fmt.Sprintf("%s_%dHz_%dch_%dframes", f.Encoding, f.SampleRate, f.Channels, frames), func(t *testing.T) {
				in := tone(max(f.SampleRate, 8000), f.Channels, frames)
				b, err := Encode(f, in)
				require.NoError(t, err)
				dataLen := len(in) * f.Encoding.BytesPerSample()
				require.Len(t, b, f.headerLen()+dataLen+dataLen%2, "header, data and pad byte")
				require.Equal(t, uint32(len(b)-8), le32u(b[4:]), "RIFF size covers everything after it, pad included")

				got, samples, err := ReadAll(bytes.NewReader(b))
				require.NoError(t, err)
				require.Equal(t, f, got)
				require.Equal(t, expected(f.Encoding, in), samples)
			})
		}
	}
}

func le32u(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func TestWriterMatchesEncode(t *testing.T) {
	for _, f := range roundTripFormats {
		t.Run(fmt.Sprintf("%s_%dHz_%dch", f.Encoding, f.SampleRate, f.Channels), func(t *testing.T) {
			in := tone(8000, f.Channels, 3001) // odd frame count: a pad byte for mono G.711
			want, err := Encode(f, in)
			require.NoError(t, err)

			var out seekBuffer
			prefix := []byte("some bytes before the file")
			_, _ = out.Write(prefix)
			w, err := NewWriter(&out, f)
			require.NoError(t, err)
			require.Equal(t, f, w.Format())
			// Uneven write sizes, larger than the internal buffer too.
			for rest := in; len(rest) > 0; {
				n := min(len(rest), f.Channels*(1+len(rest)%5000))
				require.NoError(t, w.WriteSamples(rest[:n]))
				rest = rest[n:]
			}
			require.NoError(t, w.Close())
			require.Equal(t, len(out.b), out.pos, "Close leaves the writer at the end")
			require.Equal(t, prefix, out.b[:len(prefix)])
			require.Equal(t, want, out.b[len(prefix):])
			require.ErrorIs(t, w.Close(), ErrClosed)
			require.ErrorIs(t, w.WriteSamples(in[:f.Channels]), ErrClosed)
			_, err = w.Write([]byte{1})
			require.ErrorIs(t, err, ErrClosed)
		})
	}
}

func TestWriterRawBytes(t *testing.T) {
	f := Format{ULaw, 8000, 1}
	var out seekBuffer
	w, err := NewWriter(&out, f)
	require.NoError(t, err)
	payload := []byte{0xFF, 0x7F, 0x00, 0x80, 0x11}
	n, err := w.Write(payload)
	require.NoError(t, err)
	require.Equal(t, 5, n)
	require.NoError(t, w.Close())

	r, err := NewReader(bytes.NewReader(out.b))
	require.NoError(t, err)
	require.Equal(t, int64(5), r.DataLen())
	require.Equal(t, int64(5), r.Frames())
	raw, err := io.ReadAll(r)
	require.NoError(t, err)
	require.Equal(t, payload, raw, "raw Read returns the stored codes, not the pad byte")
}

func TestWriterPartialFrame(t *testing.T) {
	f := Format{PCM16, 8000, 2}
	var out seekBuffer
	w, err := NewWriter(&out, f)
	require.NoError(t, err)
	require.ErrorIs(t, w.WriteSamples([]int16{1, 2, 3}), ErrPartialFrame)
	_, err = w.Write([]byte{1, 2, 3, 4, 5, 6})
	require.NoError(t, err)
	require.ErrorIs(t, w.Close(), ErrPartialFrame)
	// The header is patched anyway and the reader drops the partial frame.
	_, s, err := ReadAll(bytes.NewReader(out.b))
	require.NoError(t, err)
	require.Equal(t, []int16{0x0201, 0x0403}, s)

	_, err = Encode(f, []int16{1})
	require.ErrorIs(t, err, ErrPartialFrame)
	_, err = AppendHeader(nil, f, 6)
	require.ErrorIs(t, err, ErrPartialFrame)
}

func TestAppendHeaderStreams(t *testing.T) {
	f := Format{ALaw, 8000, 1}
	in := tone(8000, 1, 161)
	whole, err := Encode(f, in)
	require.NoError(t, err)
	b, err := AppendHeader([]byte("x"), f, int64(len(in)))
	require.NoError(t, err)
	require.Equal(t, byte('x'), b[0])
	data := make([]byte, len(in))
	g711.EncodeALawTo(data, in)
	b = append(append(b[1:], data...), 0)
	require.Equal(t, whole, b)

	_, err = AppendHeader(nil, f, -1)
	require.ErrorIs(t, err, ErrTooLarge)
	_, err = AppendHeader(nil, f, 1<<32)
	require.ErrorIs(t, err, ErrTooLarge)
}

func TestFormatValidate(t *testing.T) {
	for _, tc := range []struct {
		f    Format
		want error
	}{
		{Format{PCM16, 8000, 1}, nil},
		{Format{ULaw, 1, 2}, nil},
		{Format{Encoding(3), 8000, 1}, ErrUnsupportedFormat},
		{Format{PCM16, 8000, 0}, ErrZeroChannels},
		{Format{PCM16, 8000, 3}, ErrChannels},
		{Format{PCM16, 8000, -1}, ErrChannels},
		{Format{PCM16, 0, 1}, ErrZeroSampleRate},
		{Format{PCM16, -8000, 1}, ErrSampleRate},
		{Format{PCM16, 1 << 31, 2}, ErrSampleRate},
	} {
		t.Run(fmt.Sprintf("%+v", tc.f), func(t *testing.T) {
			err := tc.f.Validate()
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.want)
			_, err = Encode(tc.f, nil)
			require.ErrorIs(t, err, tc.want)
			_, err = NewWriter(&seekBuffer{}, tc.f)
			require.ErrorIs(t, err, tc.want)
		})
	}
	require.Equal(t, "ulaw", ULaw.String())
	require.Equal(t, "format 0x0055", Encoding(0x55).String())
}

func TestReaderSkipsChunksAndPadding(t *testing.T) {
	data := []byte{1, 0, 2, 0, 0xFF, 0xFF}
	b := riff("WAVE",
		chunk("LIST", []byte("INFOISFT\x05\x00\x00\x00voice\x00")),                // odd inner size, padded
		chunk("junk", []byte{1, 2, 3}),                                            // odd: pad byte follows
		chunk("fmt ", cat(fmtPayload(1, 1, 16000, 2, 16), le16(0), []byte{9, 9})), // 20-byte fmt
		chunk("fact", le32(3)),
		chunk("cue ", make([]byte, 5)),
		chunk("data", data),
		chunk("LIST", []byte("INFOtrailing")),
	)
	f, s, err := ReadAll(bytes.NewReader(b))
	require.NoError(t, err)
	require.Equal(t, Format{PCM16, 16000, 1}, f)
	require.Equal(t, []int16{1, 2, -1}, s, "trailing chunks after data are not samples")
}

func TestReaderExtensible(t *testing.T) {
	for _, tc := range []struct {
		sub  uint16
		enc  Encoding
		bits uint16
	}{{1, PCM16, 16}, {7, ULaw, 8}, {6, ALaw, 8}} {
		t.Run(tc.enc.String(), func(t *testing.T) {
			b := riff("WAVE", chunk("fmt ", fmtExtensible(tc.sub, 2, 48000, tc.bits)), chunk("data", []byte{0xFF, 0xFF, 0x7F, 0x7F}))
			f, s, err := ReadAll(bytes.NewReader(b))
			require.NoError(t, err)
			require.Equal(t, Format{tc.enc, 48000, 2}, f)
			want := map[Encoding][]int16{PCM16: {-1, 0x7F7F}, ULaw: {0, 0, 0, 0}, ALaw: {g711.DecodeALaw(0xFF), g711.DecodeALaw(0xFF), g711.DecodeALaw(0x7F), g711.DecodeALaw(0x7F)}}[tc.enc]
			require.Equal(t, want, s)
		})
	}
}

func TestReaderOpenLengthRunsToEOF(t *testing.T) {
	// A streaming writer's header: RIFF and data sizes 0xFFFFFFFF.
	b := cat([]byte("RIFF"), le32(0xFFFFFFFF), []byte("WAVE"),
		chunk("fmt ", fmtPayload(7, 1, 8000, 1, 8)),
		[]byte("data"), le32(0xFFFFFFFF), []byte{0xFF, 0x80, 0x00})
	r, err := NewReader(bytes.NewReader(b))
	require.NoError(t, err)
	require.Equal(t, int64(-1), r.DataLen())
	require.Equal(t, int64(-1), r.Frames())
	dst := make([]int16, 10)
	n, err := r.ReadSamples(dst)
	require.NoError(t, err)
	require.Equal(t, []int16{0, 32124, -32124}, dst[:n])
	n, err = r.ReadSamples(dst)
	require.Equal(t, io.EOF, err)
	require.Zero(t, n)
}

func TestReadSamplesInPieces(t *testing.T) {
	f := Format{PCM16, 8000, 2}
	in := tone(8000, 2, 3000)
	b, err := Encode(f, in)
	require.NoError(t, err)
	r, err := NewReader(bytes.NewReader(b))
	require.NoError(t, err)
	require.Equal(t, int64(3000), r.Frames())

	_, err = r.ReadSamples(make([]int16, 1))
	require.ErrorIs(t, err, io.ErrShortBuffer, "one sample cannot hold a stereo frame")
	n, err := r.ReadSamples(nil)
	require.NoError(t, err)
	require.Zero(t, n)

	var got []int16
	buf := make([]int16, 321) // odd: only 320 samples (160 frames) fit per call
	for {
		n, err := r.ReadSamples(buf)
		require.Zero(t, n%2, "whole frames only")
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
	}
	require.Equal(t, in, got)
	n, err = r.ReadSamples(buf)
	require.Equal(t, io.EOF, err, "EOF is sticky")
	require.Zero(t, n)
}

// TestReaderTruncatedData: the samples before the cut come back with
// ErrTruncated.
func TestReaderTruncatedData(t *testing.T) {
	in := tone(8000, 1, 100)
	b, err := Encode(Format{PCM16, 8000, 1}, in)
	require.NoError(t, err)
	cut := b[:44+2*40+1] // 40 samples and half of the 41st
	_, s, err := ReadAll(bytes.NewReader(cut))
	require.ErrorIs(t, err, ErrTruncated)
	require.ErrorContains(t, err, "short of the declared 200")
	require.Equal(t, in[:40], s)

	r, err := NewReader(bytes.NewReader(cut))
	require.NoError(t, err)
	raw, err := io.ReadAll(r)
	require.ErrorIs(t, err, ErrTruncated)
	require.Len(t, raw, 81)
}

func TestNoAllocations(t *testing.T) {
	for _, f := range []Format{{PCM16, 16000, 1}, {ULaw, 8000, 1}, {ALaw, 8000, 2}} {
		t.Run(f.Encoding.String(), func(t *testing.T) {
			frame := tone(f.SampleRate, f.Channels, f.SampleRate/50)
			out := &seekBuffer{b: make([]byte, 0, 1<<20)}
			w, err := NewWriter(out, f)
			require.NoError(t, err)
			var werr error
			require.Zero(t, testing.AllocsPerRun(100, func() {
				if err := w.WriteSamples(frame); err != nil {
					werr = err
				}
			}), "WriteSamples")
			require.NoError(t, werr)
			require.NoError(t, w.Close())

			r, err := NewReader(bytes.NewReader(out.b))
			require.NoError(t, err)
			dst := make([]int16, len(frame))
			var rerr error
			short := 0
			require.Zero(t, testing.AllocsPerRun(100, func() {
				n, err := r.ReadSamples(dst)
				if err != nil {
					rerr = err
				}
				if n != len(dst) {
					short++
				}
			}), "ReadSamples")
			require.NoError(t, rerr)
			require.Zero(t, short)
		})
	}
}
