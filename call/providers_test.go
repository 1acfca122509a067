package call

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/stt"
	"github.com/voiced/voiced/ai/tts"
)

// TestOfflineProvidersTranscribe checks the defaults without any provider
// URL: espeak-ng speaks, and PocketSphinx (loaded on first use) transcribes.
func TestOfflineProvidersTranscribe(t *testing.T) {
	p, err := NewProviders(ProvidersConfig{})
	require.NoError(t, err)
	defer p.Close()
	ctx := context.Background()
	a, err := p.TTS.Synthesize(ctx, tts.Request{Text: "hello world", Voice: "espeak:en-us+f2", SampleRate: 16000})
	require.NoError(t, err)
	pcm := make([]int16, 16000/10*3) // 300 ms of leading silence
	buf := make([]int16, 1024)
	for {
		n, err := a.Read(buf)
		pcm = append(pcm, buf[:n]...)
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
	}
	a.Close()
	pcm = append(pcm, make([]int16, 16000/2)...) // 500 ms after
	require.Greater(t, len(pcm), 16000/2)
	res, err := p.STT.Transcribe(ctx, stt.Request{PCM: pcm, Language: "en-US"})
	require.NoError(t, err)
	// The open language model is weak on synthetic speech (word accuracy is
	// measured in ai/stt/pocketsphinx); here the pipeline must produce words.
	require.NotEmpty(t, res.Text)
	t.Logf("heard %q", res.Text)
}
