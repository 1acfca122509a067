package pocketsphinx_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"

	"github.com/voiced/voiced/ai/stt"
	"github.com/voiced/voiced/ai/stt/pocketsphinx"
)

// BenchmarkSTTNoise streams the sentence set (8 sentences x 3 voices) clean,
// under pink noise and under two-talker babble, on the offline default's
// decoder with and without the cap on active HMMs, and reports the word
// accuracy and the CPU each second of audio cost (process CPU time, one
// decoder on one goroutine). In noise the search keeps far more of itself
// alive, which is what made live decoders fall behind callers on a busy
// node (issue 31, docs/decisions.md). Run:
//
//	go test -run '^$' -bench STTNoise -benchtime 1x ./ai/stt/pocketsphinx/
func BenchmarkSTTNoise(b *testing.B) {
	for _, extra := range []string{"", "-maxhmmpf 6000", "-maxhmmpf 3000"} {
		name := strings.ReplaceAll(strings.TrimPrefix(extra, "-"), " ", "=")
		if name == "" {
			name = "uncapped"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				noiseRun(b, append([]string{"-fwdflat", "no"}, strings.Fields(extra)...))
			}
		})
	}
}

// noiseRun streams the set once in each condition and reports the
// figures.
func noiseRun(t *testing.B, args []string) {
	s := newSynth(t)
	r := newRecognizer(t, pocketsphinx.Config{Args: args})
	rnd := rand.New(rand.NewPCG(3, 4))
	for _, kind := range []string{"clean", "pink", "babble"} {
		var words, errs int
		var audio float64
		var used int64
		for _, v := range voices {
			for si, text := range sentences {
				sp := say(t, s, text, v)
				other := say(t, s, sentences[(si+3)%len(sentences)], voices[(si+1)%3])
				other2 := say(t, s, sentences[(si+5)%len(sentences)], voices[(si+2)%3])
				var e float64
				for _, x := range sp {
					e += float64(x) * float64(x)
				}
				rms := math.Sqrt(e / float64(len(sp)))
				pcm := make([]int16, len(sp))
				var b0, b1, b2 float64
				for i := range pcm {
					y := float64(sp[i])
					w := rnd.NormFloat64()
					switch kind {
					case "pink":
						b0 = 0.99765*b0 + w*0.0990460
						b1 = 0.96300*b1 + w*0.2965164
						b2 = 0.57000*b2 + w*1.0526913
						y += (b0 + b1 + b2 + w*0.1848) * rms / math.Sqrt(10) / 3
					case "babble":
						y += (float64(other[i%len(other)]) + float64(other2[(i+4000)%len(other2)])) / math.Sqrt(10) / math.Sqrt2
					}
					pcm[i] = int16(max(-32768, min(32767, y)))
				}
				st, err := r.Stream(context.Background(), stt.Request{})
				if err != nil {
					t.Fatal(err)
				}
				c0 := cpu()
				for i := 0; i < len(pcm); i += 320 {
					if err := st.Write(pcm[i:min(len(pcm), i+320)]); err != nil {
						t.Fatal(err)
					}
					st.Partial()
				}
				res, err := st.Finish(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				used += cpu() - c0
				audio += float64(len(pcm)) / 16000
				words += len(strings.Fields(text))
				errs += wordErrors(text, res.Text)
			}
		}
		t.ReportMetric(100*(1-float64(errs)/float64(words)), "acc%-"+kind)
		t.ReportMetric(float64(used)/1e9/audio, "cpu/s-"+kind)
	}
}

// cpu is the process's CPU time so far, in nanoseconds.
func cpu() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
