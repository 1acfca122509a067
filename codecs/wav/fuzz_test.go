package wav

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// knownErrors are the errors a reader may return for bad input; anything
// else from an in-memory reader is a bug.
var knownErrors = []error{ErrNotRIFF, ErrNotWAVE, ErrMissingFmt, ErrMissingData, ErrFmtChunk,
	ErrUnsupportedFormat, ErrBitsPerSample, ErrBlockAlign, ErrZeroChannels, ErrChannels,
	ErrZeroSampleRate, ErrSampleRate, ErrChunkSize, ErrTruncated}

func isKnown(err error) bool {
	for _, k := range knownErrors {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

// FuzzWAVRead parses arbitrary bytes. It must never panic, only return the
// package's errors, and whatever it reads must survive a write and re-read
// unchanged (G.711 samples re-encode to the same codes).
func FuzzWAVRead(f *testing.F) {
	matches, _ := filepath.Glob(filepath.Join("testdata", "*.wav"))
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			f.Fatal(err)
		}
		// Large seeds make the engine spend its time minimizing them.
		if len(b) <= 4096 {
			f.Add(b)
		}
	}
	for _, fm := range []Format{{PCM16, 8000, 1}, {ULaw, 8000, 2}, {ALaw, 16000, 1}} {
		b, err := Encode(fm, tone(8000, fm.Channels, 9))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)-3])
	}
	f.Add(riff("WAVE", chunk("LIST", []byte("INFOx")), chunk("fmt ", fmtExtensible(1, 2, 8000, 16)), chunk("data", []byte{1, 2, 3, 4})))
	f.Add(cat([]byte("RIFF"), le32(0xFFFFFFFF), []byte("WAVE"), chunk("fmt ", fmtPayload(6, 1, 8000, 1, 8)), []byte("data"), le32(0xFFFFFFFF), []byte{1, 2, 3}))
	f.Add([]byte("RIFF\x00\x00\x00\x00WAVE"))
	f.Fuzz(func(t *testing.T, data []byte) {
		format, samples, err := ReadAll(bytes.NewReader(data))
		if err != nil && !isKnown(err) {
			t.Fatalf("unexpected error type: %v", err)
		}
		if len(samples)*format.Encoding.BytesPerSample() > len(data) {
			t.Fatalf("%d samples from %d bytes", len(samples), len(data))
		}
		if err != nil && format == (Format{}) { // the header was rejected
			if samples != nil {
				t.Fatalf("samples returned with header error %v", err)
			}
			return
		}
		if err != nil && !errors.Is(err, ErrTruncated) {
			t.Fatalf("error after a valid header: %v", err)
		}
		if len(samples)%format.Channels != 0 {
			t.Fatalf("%d samples is not whole %d-channel frames", len(samples), format.Channels)
		}
		b, err := Encode(format, samples)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", format, err)
		}
		format2, samples2, err := ReadAll(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("re-read: %v", err)
		}
		if format2 != format || !equal(samples, samples2) {
			t.Fatalf("round trip changed the audio: %+v -> %+v", format, format2)
		}

		// Reading in small, odd pieces gives the same samples.
		r, err := NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("NewReader failed after ReadAll succeeded: %v", err)
		}
		var pieces []int16
		buf := make([]int16, 3)
		for {
			n, err := r.ReadSamples(buf)
			pieces = append(pieces, buf[:n]...)
			if err == io.EOF || errors.Is(err, ErrTruncated) {
				break
			}
			if err != nil {
				t.Fatalf("ReadSamples: %v", err)
			}
		}
		if !equal(pieces, samples) {
			t.Fatalf("piecewise read gave %d samples, ReadAll %d", len(pieces), len(samples))
		}
	})
}

func equal(a, b []int16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
