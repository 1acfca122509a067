package pocketsphinx_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/stt"
	"github.com/voiced/voiced/ai/stt/pocketsphinx"
	"github.com/voiced/voiced/media/pace"
)

// TestDecodeThreadsAtMostTheCores: one decoding thread per P, but no
// more than the cores when the node has Ps beyond them (the realtime
// pacer doubles GOMAXPROCS for its workers).
func TestDecodeThreadsAtMostTheCores(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(2 * runtime.NumCPU())
	require.Equal(t, runtime.NumCPU(), pocketsphinx.DecodeThreadCount())
	runtime.GOMAXPROCS(1)
	require.Equal(t, 1, pocketsphinx.DecodeThreadCount())
}

// TestDecodeThreadsNiced: the decoder's C code runs on threads at a
// lower priority than the node's, and a stream decoded there gives the
// same words as on the caller's thread.
func TestDecodeThreadsNiced(t *testing.T) {
	if runtime.GOOS == "linux" {
		n, err := pocketsphinx.DecodeThreadNice()
		require.NoError(t, err)
		require.Equal(t, 10, n)
	}
	s := newSynth(t)
	pcm := say(t, s, sentences[2], "en-us")
	var texts []string
	for _, d := range []bool{true, false} {
		// A fresh decoder each: a decoder's state carries over from one
		// segment to the next.
		pocketsphinx.SetDirect(d)
		r := newRecognizer(t, pocketsphinx.Config{Args: []string{"-fwdflat", "no"}})
		st, err := r.Stream(context.Background(), stt.Request{})
		require.NoError(t, err)
		_, res := streamText(t, st, pcm)
		texts = append(texts, res.Text)
	}
	pocketsphinx.SetDirect(false)
	require.NotEmpty(t, texts[0])
	require.Equal(t, texts[0], texts[1])
}

type nopStream struct{}

func (nopStream) Tick(time.Time) {}

// BenchmarkPacerWhileDecoding: a media node's pacer (20 ms, PreciseWake,
// one worker per P) ticks while 8 decoders stream a sentence each, 20 ms
// writes as fast as they decode (a backlog of turns), with the C code on
// the caller's threads at the node's priority ("direct", before) or on
// the decoding threads ("threads"). Reported: the pacer's tick lateness
// p99 and max over the op, and the decoding's real-time factor per
// decoder. Run with -count to interleave the two.
func BenchmarkPacerWhileDecoding(b *testing.B) {
	s := newSynth(b)
	pcm := say(b, s, sentences[2], "en-us")
	const decoders = 8
	recs := make([]*pocketsphinx.Recognizer, decoders)
	for i := range recs {
		recs[i] = newRecognizer(b, pocketsphinx.Config{Args: []string{"-fwdflat", "no"}})
	}
	audio := time.Duration(len(pcm)) * time.Second / stt.SampleRate
	for _, mode := range []string{"direct", "threads"} {
		b.Run(mode, func(b *testing.B) {
			pocketsphinx.SetDirect(mode == "direct")
			defer pocketsphinx.SetDirect(false)
			var lateP99, lateMax time.Duration
			var decoded atomic.Int64
			start := time.Now()
			for b.Loop() {
				p, err := pace.New(pace.Config{Workers: runtime.GOMAXPROCS(0), PreciseWake: true}, nil)
				require.NoError(b, err)
				_, err = p.Register(nopStream{})
				require.NoError(b, err)
				time.Sleep(100 * time.Millisecond)
				var wg sync.WaitGroup
				for _, r := range recs {
					wg.Go(func() {
						st, err := r.Stream(context.Background(), stt.Request{})
						if err != nil {
							b.Error(err)
							return
						}
						for i := 0; i < len(pcm); i += 320 {
							if err := st.Write(pcm[i:min(len(pcm), i+320)]); err != nil {
								b.Error(err)
							}
						}
						if _, err := st.Finish(context.Background()); err != nil {
							b.Error(err)
						}
						decoded.Add(int64(audio))
					})
				}
				wg.Wait()
				st := p.Stats()
				p.Close()
				lateP99, lateMax = max(lateP99, st.LateP99), max(lateMax, st.LateMax)
			}
			b.ReportMetric(float64(lateP99)/1e6, "late-p99-ms")
			b.ReportMetric(float64(lateMax)/1e6, "late-max-ms")
			b.ReportMetric(time.Since(start).Seconds()*decoders/time.Duration(decoded.Load()).Seconds(), "rtf")
		})
	}
}

// BenchmarkStreamWrite is one 20 ms write to a stream, on the caller's
// thread or handed to a decoding thread: the hand-over's cost.
func BenchmarkStreamWrite(b *testing.B) {
	s := newSynth(b)
	pcm := say(b, s, sentences[2], "en-us")
	r := newRecognizer(b, pocketsphinx.Config{Args: []string{"-fwdflat", "no"}})
	for _, mode := range []string{"direct", "threads"} {
		b.Run(mode, func(b *testing.B) {
			pocketsphinx.SetDirect(mode == "direct")
			defer pocketsphinx.SetDirect(false)
			st, err := r.Stream(context.Background(), stt.Request{})
			require.NoError(b, err)
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				if i+320 > len(pcm) {
					i = 0
				}
				if err := st.Write(pcm[i : i+320]); err != nil {
					b.Fatal(err)
				}
				i += 320
			}
			b.StopTimer()
			require.NoError(b, st.Close())
		})
	}
}
