package pocketsphinx_test

import (
	"context"
	"testing"
	"time"

	"github.com/voiced/voiced/ai/stt"
	"github.com/voiced/voiced/ai/stt/pocketsphinx"
)

// BenchmarkSTTPocketsphinx decodes one espeak-made segment per op with the
// digits grammar and with the open language model, and reports the
// real-time factor (decoding time over segment duration) and the word
// accuracy over the test sets (digits: 20 strings, sentences: 8) in the
// three voices of the tests, measured once before timing.
func BenchmarkSTTPocketsphinx(b *testing.B) {
	s := newSynth(b)
	for _, tc := range []struct {
		name  string
		cfg   pocketsphinx.Config
		text  string
		texts []string
	}{
		{"digits", pocketsphinx.Config{Words: digitWords}, "four one nine two one seven", digitStrings(20)},
		{"lm", pocketsphinx.Config{}, "i would like to book a table for two people tomorrow", sentences},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r := newRecognizer(b, tc.cfg)
			accs := map[string]float64{}
			for _, v := range voices {
				accs[v], _ = accuracy(b, s, r, tc.texts, v)
			}
			pcm := say(b, s, tc.text, "en-us")
			audio := time.Duration(len(pcm)) * time.Second / stt.SampleRate
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				if _, err := r.Transcribe(context.Background(), stt.Request{PCM: pcm}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(time.Since(start).Seconds()/float64(b.N)/audio.Seconds(), "rtf")
			for v, a := range accs {
				b.ReportMetric(100*a, "acc%-"+v)
			}
		})
	}
}
