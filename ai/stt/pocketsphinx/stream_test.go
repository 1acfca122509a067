package pocketsphinx_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/stt"
	"github.com/voiced/voiced/ai/stt/pocketsphinx"
)

// streamText feeds pcm to a stream 20 ms at a time and returns its
// partials (one per 100 ms written) and its result.
func streamText(t *testing.T, st stt.Stream, pcm []int16) ([]string, stt.Result) {
	t.Helper()
	var partials []string
	for i := 0; i < len(pcm); i += 320 {
		require.NoError(t, st.Write(pcm[i:min(len(pcm), i+320)]))
		if i%1600 == 0 {
			partials = append(partials, st.Partial())
		}
	}
	res, err := st.Finish(context.Background())
	require.NoError(t, err)
	return partials, res
}

// TestStream decodes the sentence set as it arrives, on one decoder:
// words grow in the partials while the audio comes, every turn ends with
// words, and the word accuracy is that of the whole-turn pass (measured,
// the offline configuration: 47.9-58.3% streamed, 47.9% whole).
func TestStream(t *testing.T) {
	s := newSynth(t)
	r := newRecognizer(t, pocketsphinx.Config{Args: []string{"-fwdflat", "no"}})
	var words, errs int
	for _, text := range sentences {
		st, err := r.Stream(context.Background(), stt.Request{})
		require.NoError(t, err)
		partials, res := streamText(t, st, say(t, s, text, "en-us+f2"))
		require.NotEmpty(t, res.Text, text)
		require.NotEmpty(t, partials[len(partials)-1], "a partial before the end: %q", text)
		words += len(strings.Fields(text))
		errs += wordErrors(text, res.Text)
		// Finished: a second Finish fails, Close is a no-op.
		_, err = st.Finish(context.Background())
		require.ErrorIs(t, err, pocketsphinx.ErrClosed)
		require.NoError(t, st.Close())
	}
	acc := 1 - float64(errs)/float64(words)
	t.Logf("streamed word accuracy %.1f%%", 100*acc)
	require.GreaterOrEqual(t, acc, 0.45)

	// An abandoned stream frees the decoder for the next one.
	st, err := r.Stream(context.Background(), stt.Request{PCM: say(t, s, "hello", "en-us+f2")})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	res, err := r.Transcribe(context.Background(), stt.Request{PCM: say(t, s, "thank you very much goodbye", "en-us+f2")})
	require.NoError(t, err)
	require.Contains(t, res.Text, "thank you")
}

// TestPoolStreamBeyondSize holds more streams than the pool has decoders:
// none waits to start; those without a decoder keep their audio and get
// one when another stream ends, and every stream's words are the ones a
// stream on one decoder gives (each stream's cepstral mean is its own).
func TestPoolStreamBeyondSize(t *testing.T) {
	s := newSynth(t)
	cfg := pocketsphinx.Config{Words: digitWords}
	texts := digitStrings(4)
	pcm := make([][]int16, len(texts))
	r := newRecognizer(t, cfg)
	want := make([]string, len(texts))
	for i, text := range texts {
		pcm[i] = say(t, s, text, "en-us+f2")
		st, err := r.Stream(context.Background(), stt.Request{PCM: pcm[i]})
		require.NoError(t, err)
		res, err := st.Finish(context.Background())
		require.NoError(t, err)
		want[i] = res.Text
	}
	p := pocketsphinx.NewPool(cfg, 2)
	defer p.Close()
	streams := make([]stt.Stream, len(texts))
	for i := range streams {
		st, err := p.Stream(context.Background(), stt.Request{PCM: pcm[i][:len(pcm[i])/2]})
		require.NoError(t, err)
		streams[i] = st
	}
	// Two have decoders (partials), two keep their audio.
	require.Equal(t, "", streams[3].Partial())
	got := make([]string, len(texts))
	var wg sync.WaitGroup
	for i, st := range streams {
		wg.Go(func() {
			if err := st.Write(pcm[i][len(pcm[i])/2:]); err != nil {
				t.Error(err)
			}
			res, err := st.Finish(context.Background())
			if err != nil {
				t.Error(err)
			}
			got[i] = res.Text
		})
	}
	wg.Wait()
	require.Equal(t, want, got)
}
