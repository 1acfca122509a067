package amd_test

import (
	"testing"
	"time"

	"github.com/voiced/voiced/media/amd"
	"github.com/voiced/voiced/media/amd/amdtest"
)

// BenchmarkProcess is the cost of one 20 ms frame of speech at 16 kHz
// (VAD, verdict rules and the tone test).
func BenchmarkProcess(b *testing.B) {
	pcm := amdtest.Speech(b, amdtest.Greeting, "", rate)
	d, err := amd.New(amd.Config{MaxGreeting: time.Hour, MaxWords: 1 << 30, MaxAnalysis: time.Hour, InitialSilence: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	frames := len(pcm) / 320
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Process(pcm[i*320 : (i+1)*320]); err != nil {
			b.Fatal(err)
		}
		if i++; i == frames {
			i = 0
			d.Reset()
		}
	}
}
