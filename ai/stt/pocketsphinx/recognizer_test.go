package pocketsphinx_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/stt"
	"github.com/voiced/voiced/ai/stt/pocketsphinx"
)

func TestRecognizerLifecycle(t *testing.T) {
	r := newRecognizer(t, pocketsphinx.Config{Words: digitWords})
	ctx := context.Background()

	res, err := r.Transcribe(ctx, stt.Request{PCM: make([]int16, 16000)})
	require.NoError(t, err)
	require.Equal(t, stt.Result{}, res, "silence is no words")

	_, err = r.Transcribe(ctx, stt.Request{})
	require.ErrorIs(t, err, stt.ErrNoAudio)

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = r.Transcribe(canceled, stt.Request{PCM: make([]int16, 1600)})
	require.ErrorIs(t, err, context.Canceled)

	require.NoError(t, r.Close())
	require.NoError(t, r.Close())
	_, err = r.Transcribe(ctx, stt.Request{PCM: make([]int16, 1600)})
	require.ErrorIs(t, err, pocketsphinx.ErrClosed)
}

func TestNewErrors(t *testing.T) {
	_, err := pocketsphinx.New(pocketsphinx.Config{Words: []string{"one", "flibbertigibbetzz"}})
	require.ErrorIs(t, err, pocketsphinx.ErrUnknownWord)
	require.ErrorContains(t, err, "flibbertigibbetzz")
	_, err = pocketsphinx.New(pocketsphinx.Config{Grammar: "#JSGF V1.0; grammar g; public <a> = ( one | ;"})
	require.ErrorIs(t, err, pocketsphinx.ErrModel)
	_, err = pocketsphinx.New(pocketsphinx.Config{ModelDir: t.TempDir(), Words: digitWords})
	require.ErrorIs(t, err, pocketsphinx.ErrModel)
	_, err = pocketsphinx.New(pocketsphinx.Config{Words: digitWords, Args: []string{"-nosuchoption", "1"}})
	require.ErrorIs(t, err, pocketsphinx.ErrModel)
}

// TestConcurrentTranscribe shares one Recognizer between goroutines: calls
// are serialized and each gets what it gets alone.
func TestConcurrentTranscribe(t *testing.T) {
	s := newSynth(t)
	r := newRecognizer(t, pocketsphinx.Config{Words: digitWords})
	texts := digitStrings(4)
	pcm := make([][]int16, len(texts))
	want := make([]string, len(texts))
	for i, text := range texts {
		pcm[i] = say(t, s, text, "en-us+f2")
		res, err := r.Transcribe(context.Background(), stt.Request{PCM: pcm[i]})
		require.NoError(t, err)
		want[i] = res.Text
	}
	got := make([][]string, len(texts))
	var wg sync.WaitGroup
	for i := range texts {
		wg.Go(func() {
			for range 3 {
				res, err := r.Transcribe(context.Background(), stt.Request{PCM: pcm[i]})
				if err != nil {
					t.Error(err)
					return
				}
				got[i] = append(got[i], res.Text)
			}
		})
	}
	wg.Wait()
	for i := range texts {
		require.Equal(t, []string{want[i], want[i], want[i]}, got[i])
	}
}
