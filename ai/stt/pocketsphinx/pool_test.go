package pocketsphinx_test

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/stt"
	"github.com/voiced/voiced/ai/stt/pocketsphinx"
)

// TestPool decodes turns from more goroutines than the pool has
// Recognizers: each gets the text one Recognizer gives, and Close ends it.
func TestPool(t *testing.T) {
	s := newSynth(t)
	cfg := pocketsphinx.Config{Words: digitWords}
	r := newRecognizer(t, cfg)
	texts := digitStrings(6)
	pcm := make([][]int16, len(texts))
	want := make([]string, len(texts))
	for i, text := range texts {
		pcm[i] = say(t, s, text, "en-us+f2")
		res, err := r.Transcribe(context.Background(), stt.Request{PCM: pcm[i]})
		require.NoError(t, err)
		want[i] = res.Text
	}
	p := pocketsphinx.NewPool(cfg, 2)
	require.Equal(t, 2, p.Size())
	got := make([]string, len(texts))
	var wg sync.WaitGroup
	for i := range texts {
		wg.Go(func() {
			res, err := p.Transcribe(context.Background(), stt.Request{PCM: pcm[i]})
			if err != nil {
				t.Error(err)
			}
			got[i] = res.Text
		})
	}
	wg.Wait()
	require.Equal(t, want, got)

	_, err := p.Transcribe(context.Background(), stt.Request{})
	require.ErrorIs(t, err, stt.ErrNoAudio)
	require.NoError(t, p.Close())
	require.NoError(t, p.Close())
	_, err = p.Transcribe(context.Background(), stt.Request{PCM: pcm[0]})
	require.ErrorIs(t, err, pocketsphinx.ErrClosed)
}

// TestPoolModelError: a model that does not load fails every call alike.
func TestPoolModelError(t *testing.T) {
	p := pocketsphinx.NewPool(pocketsphinx.Config{ModelDir: t.TempDir()}, 2)
	defer p.Close()
	for range 2 {
		_, err := p.Transcribe(context.Background(), stt.Request{PCM: make([]int16, 1600)})
		require.ErrorIs(t, err, pocketsphinx.ErrModel)
	}
}

// TestPoolWaitCancelled: a call waiting for a busy pool gives up when its
// context ends.
func TestPoolWaitCancelled(t *testing.T) {
	s := newSynth(t)
	p := pocketsphinx.NewPool(pocketsphinx.Config{}, 1)
	defer p.Close()
	long := say(t, s, "i would like to book a table for two people tomorrow and the day after", "en-us")
	started := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		close(started)
		if _, err := p.Transcribe(context.Background(), stt.Request{PCM: long}); err != nil {
			t.Error(err)
		}
	})
	<-started
	// The first call holds the only Recognizer for its load (about 0.5 s)
	// and decode (about 1.5 s).
	time.Sleep(100 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := p.Transcribe(ctx, stt.Request{PCM: long})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	wg.Wait()
}

// BenchmarkSTTConcurrent is N callers ending their turns at once (a 2.6 s
// sentence each) on one node: the time from each turn's end to its
// transcript, p50 and max over the N, with one Recognizer for the node
// (as before the Pool) and with a Pool of GOMAXPROCS Recognizers.
func BenchmarkSTTConcurrent(b *testing.B) {
	s := newSynth(b)
	pcm := say(b, s, "i would like to book a table for two people tomorrow", "en-us+f2")
	for _, n := range []int{1, 10} {
		for _, kind := range []string{"one", "pool"} {
			b.Run(kind+"/"+string(rune('0'+n/10))+string(rune('0'+n%10)), func(b *testing.B) {
				var tr stt.Transcriber
				if kind == "one" {
					tr = newRecognizer(b, pocketsphinx.Config{})
				} else {
					p := pocketsphinx.NewPool(pocketsphinx.Config{}, maxProcs())
					b.Cleanup(func() { p.Close() })
					tr = p
				}
				// Warm: load every Recognizer the run will use.
				var wg sync.WaitGroup
				for range n {
					wg.Go(func() { _, _ = tr.Transcribe(context.Background(), stt.Request{PCM: pcm}) })
				}
				wg.Wait()
				var lat []time.Duration
				var mu sync.Mutex
				for b.Loop() {
					start := time.Now()
					for range n {
						wg.Go(func() {
							if _, err := tr.Transcribe(context.Background(), stt.Request{PCM: pcm}); err != nil {
								b.Error(err)
							}
							mu.Lock()
							lat = append(lat, time.Since(start))
							mu.Unlock()
						})
					}
					wg.Wait()
				}
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50-ms")
				b.ReportMetric(float64(lat[len(lat)-1].Milliseconds()), "max-ms")
			})
		}
	}
}

func maxProcs() int { return runtime.GOMAXPROCS(0) }

// TestPoolPrepare: each prepared session gets a Recognizer made in the
// background, up to Size, before it streams; its streams then start on
// it at once; sessions that ended ask for no more.
func TestPoolPrepare(t *testing.T) {
	p := pocketsphinx.NewPool(pocketsphinx.Config{Words: digitWords}, 2)
	defer p.Close()
	var dones []func()
	for range 3 {
		dones = append(dones, p.Prepare())
	}
	require.Eventually(t, func() bool { return p.Loaded() == 2 }, 20*time.Second, 10*time.Millisecond, "a recognizer per session, up to Size")
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, 2, p.Loaded(), "never more than Size")
	for range 2 {
		t0 := time.Now()
		s, err := p.Stream(context.Background(), stt.Request{PCM: make([]int16, 1600)})
		require.NoError(t, err)
		require.Less(t, time.Since(t0), 100*time.Millisecond, "the stream found its recognizer made")
		defer s.Close()
	}
	for _, done := range dones {
		done()
		done() // idempotent
	}
	q := pocketsphinx.NewPool(pocketsphinx.Config{Words: digitWords}, 2)
	defer q.Close()
	q.Prepare()()
	time.Sleep(500 * time.Millisecond)
	require.LessOrEqual(t, q.Loaded(), 1, "a session that ended at once asks for nothing more")
}
