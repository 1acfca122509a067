package wav

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMalformedHeaders(t *testing.T) {
	pcmFmt := chunk("fmt ", fmtPayload(1, 1, 8000, 2, 16))
	data := chunk("data", []byte{1, 0, 2, 0})
	good := riff("WAVE", pcmFmt, data)
	for _, tc := range []struct {
		name    string
		in      []byte
		want    error
		message string // part of the error text that names the problem
	}{
		{"empty", nil, ErrTruncated, "RIFF header"},
		{"short RIFF prefix", []byte("RI"), ErrTruncated, "RIFF header"},
		{"RIFF header cut", good[:10], ErrTruncated, "RIFF header"},
		{"not RIFF", []byte("OggS\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00"), ErrNotRIFF, `"OggS"`},
		{"short garbage", []byte("ab"), ErrNotRIFF, `"ab"`},
		{"RF64", append([]byte("RF64"), good[4:]...), ErrNotRIFF, `"RF64"`},
		{"RIFX big endian", append([]byte("RIFX"), good[4:]...), ErrNotRIFF, `"RIFX"`},
		{"not WAVE", riff("AVI ", pcmFmt, data), ErrNotWAVE, `"AVI "`},
		{"no chunks", riff("WAVE"), ErrMissingFmt, "end of file"},
		{"data before fmt", riff("WAVE", data, pcmFmt), ErrMissingFmt, "data chunk"},
		{"only LIST", riff("WAVE", chunk("LIST", []byte("INFO"))), ErrMissingFmt, ""},
		{"no data", riff("WAVE", pcmFmt, chunk("LIST", []byte("INFO"))), ErrMissingData, ""},
		{"chunk header cut", riff("WAVE", pcmFmt)[:40], ErrTruncated, "chunk header at offset 36"},
		{"fmt too short", riff("WAVE", chunk("fmt ", fmtPayload(1, 1, 8000, 2, 16)[:14]), data), ErrFmtChunk, "14 bytes"},
		{"fmt body cut", good[:30], ErrChunkSize, `"fmt "`},
		{"float", riff("WAVE", chunk("fmt ", fmtPayload(3, 1, 8000, 4, 32)), data), ErrUnsupportedFormat, "0x0003"},
		{"mp3 in wav", riff("WAVE", chunk("fmt ", fmtPayload(0x55, 1, 8000, 1, 0)), data), ErrUnsupportedFormat, "0x0055"},
		{"extensible float", riff("WAVE", chunk("fmt ", fmtExtensible(3, 1, 8000, 32)), data), ErrUnsupportedFormat, "0x0003"},
		{"extensible bad GUID", riff("WAVE", chunk("fmt ", append(fmtExtensible(1, 1, 8000, 16)[:39], 0x72)), data), ErrUnsupportedFormat, "GUID"},
		{"extensible short", riff("WAVE", chunk("fmt ", fmtExtensible(1, 1, 8000, 16)[:18]), data), ErrFmtChunk, "EXTENSIBLE"},
		{"pcm 8 bit", riff("WAVE", chunk("fmt ", fmtPayload(1, 1, 8000, 1, 8)), data), ErrBitsPerSample, "8 bits per sample for pcm16"},
		{"pcm 24 bit", riff("WAVE", chunk("fmt ", fmtPayload(1, 1, 8000, 3, 24)), data), ErrBitsPerSample, "24 bits"},
		{"ulaw 16 bit", riff("WAVE", chunk("fmt ", fmtPayload(7, 1, 8000, 2, 16)), data), ErrBitsPerSample, "ulaw"},
		{"zero channels", riff("WAVE", chunk("fmt ", fmtPayload(1, 0, 8000, 0, 16)), data), ErrZeroChannels, ""},
		{"six channels", riff("WAVE", chunk("fmt ", fmtPayload(1, 6, 8000, 12, 16)), data), ErrChannels, "6 channels"},
		{"zero rate", riff("WAVE", chunk("fmt ", fmtPayload(1, 1, 0, 2, 16)), data), ErrZeroSampleRate, ""},
		{"huge rate", riff("WAVE", chunk("fmt ", fmtPayload(1, 2, 0xFFFFFFFF, 4, 16)), data), ErrSampleRate, ""},
		{"block align", riff("WAVE", chunk("fmt ", fmtPayload(1, 2, 8000, 2, 16)), data), ErrBlockAlign, "block align 2"},
		{"chunk beyond input", cat([]byte("RIFF"), le32(0), []byte("WAVE"), pcmFmt, []byte("LIST"), le32(1000), []byte("INFO")), ErrChunkSize, `"LIST" at offset 36 declares 1000 bytes`},
		{"data beyond RIFF", cat([]byte("RIFF"), le32(40), []byte("WAVE"), pcmFmt, []byte("data"), le32(100), make([]byte, 100)), ErrChunkSize, `"data"`},
		{"fmt beyond RIFF", cat([]byte("RIFF"), le32(20), []byte("WAVE"), pcmFmt, data), ErrChunkSize, `"fmt "`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewReader(bytes.NewReader(tc.in))
			require.ErrorIs(t, err, tc.want)
			require.Nil(t, r)
			require.ErrorContains(t, err, tc.message)
			_, s, err := ReadAll(bytes.NewReader(tc.in))
			require.ErrorIs(t, err, tc.want)
			require.Nil(t, s)
		})
	}
	_, s, err := ReadAll(bytes.NewReader(good))
	require.NoError(t, err, "the base of the table is valid")
	require.Equal(t, []int16{1, 2}, s)
}

// failingReader returns its data, then a non-EOF error.
type failingReader struct {
	data []byte
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

func TestReaderPassesIOErrors(t *testing.T) {
	boom := errors.New("disk on fire")
	b, err := Encode(Format{PCM16, 8000, 1}, tone(8000, 1, 100))
	require.NoError(t, err)

	_, err = NewReader(&failingReader{data: b[:20], err: boom})
	require.ErrorIs(t, err, boom)

	_, s, err := ReadAll(&failingReader{data: b[:44+20], err: boom})
	require.ErrorIs(t, err, boom)
	require.NotErrorIs(t, err, ErrTruncated)
	require.Len(t, s, 10)
}

// TestHostileSizesUseBoundedMemory: headers declaring gigabytes must not make
// the reader reserve them.
func TestHostileSizesUseBoundedMemory(t *testing.T) {
	pcmFmt := chunk("fmt ", fmtPayload(1, 2, 48000, 4, 16))
	for _, tc := range []struct {
		name string
		in   []byte
		want error
	}{
		{"data 4 GiB", cat([]byte("RIFF"), le32(0xFFFFFFF0), []byte("WAVE"), pcmFmt, []byte("data"), le32(0xFFFFFF00), make([]byte, 64)), ErrTruncated},
		{"LIST 4 GiB", cat([]byte("RIFF"), le32(0), []byte("WAVE"), pcmFmt, []byte("LIST"), le32(0xFFFFFFF0), make([]byte, 64)), ErrChunkSize},
		{"fmt 4 GiB", cat([]byte("RIFF"), le32(0xFFFFFFFF), []byte("WAVE"), []byte("fmt "), le32(0xFFFFFFF0), fmtPayload(1, 1, 8000, 2, 16)), ErrChunkSize},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, _, err := ReadAll(bytes.NewReader(tc.in))
			runtime.ReadMemStats(&after)
			require.ErrorIs(t, err, tc.want)
			require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(4<<20), "bytes allocated")
		})
	}
}

func TestReadAfterErrorIsSticky(t *testing.T) {
	b, err := Encode(Format{ULaw, 8000, 1}, tone(8000, 1, 10))
	require.NoError(t, err)
	r, err := NewReader(bytes.NewReader(b[:len(b)-3]))
	require.NoError(t, err)
	dst := make([]int16, 100)
	n, err := r.ReadSamples(dst)
	require.Equal(t, 7, n)
	require.ErrorIs(t, err, ErrTruncated)
	n, err = r.ReadSamples(dst)
	require.Zero(t, n)
	require.ErrorIs(t, err, ErrTruncated)
	_, err = r.Read(make([]byte, 4))
	require.ErrorIs(t, err, ErrTruncated)
	require.NotErrorIs(t, err, io.EOF)
}
