package realtime

import (
	"context"
	"encoding/base64"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/stt"
	"github.com/voiced/voiced/ai/stt/pocketsphinx"
)

// TestTranscriptionDeltas: with the offline STT (PocketSphinx, decoding
// while the caller speaks) a session with input_audio_transcription gets
// conversation.item.input_audio_transcription.delta events for the
// caller's item while the caller is still speaking (before speech_stopped),
// appended text that concatenates to the completed transcript; a session
// without input_audio_transcription gets none, as from OpenAI.
func TestTranscriptionDeltas(t *testing.T) {
	pool := pocketsphinx.NewPool(offlineDecoder, 1)
	t.Cleanup(func() { pool.Close() })
	caller := loadWAV(t, "caller16k.wav")
	// Load the decoder (and start PocketSphinx's decoding threads, which
	// live as long as the process) before the goroutine count is taken.
	_, err := pool.Transcribe(context.Background(), stt.Request{PCM: caller})
	require.NoError(t, err)
	e := newEnvSTT(t, Config{}, pool)
	session := func(transcribe bool) []event {
		c, _ := e.dial(t, "", bearer(goodKey))
		s := map[string]any{"type": "realtime",
			"audio": map[string]any{"input": map[string]any{"format": "pcm16"}, "output": map[string]any{"format": "pcm16"}}}
		if transcribe {
			s["audio"].(map[string]any)["input"].(map[string]any)["transcription"] = map[string]any{"model": "gpt-4o-transcribe"}
		}
		c.send(map[string]any{"type": "session.update", "session": s})
		c.next("session.updated")
		// In real time: 100 ms chunks every 100 ms.
		for _, chunk := range speechChunks(t, caller, format{codecPCM, 24000}) {
			c.send(map[string]any{"type": "input_audio_buffer.append", "audio": base64.StdEncoding.EncodeToString(chunk)})
			time.Sleep(100 * time.Millisecond)
		}
		c.next("conversation.item.input_audio_transcription.completed")
		return c.all()
	}

	evs := session(true)
	var item, deltas, transcript string
	var n, beforeStop int
	stopped := false
	for _, ev := range evs {
		switch ev.Type {
		case "input_audio_buffer.speech_started":
			item = ev.str("item_id")
		case "input_audio_buffer.speech_stopped":
			stopped = true
		case "conversation.item.input_audio_transcription.delta":
			require.Equal(t, item, ev.str("item_id"), "%v", ev.Fields)
			require.EqualValues(t, 0, ev.num("content_index"))
			require.NotEmpty(t, ev.str("event_id"))
			require.NotEmpty(t, ev.str("delta"))
			require.Empty(t, transcript, "a delta after the completed transcript")
			deltas += ev.str("delta")
			n++
			if !stopped {
				beforeStop++
			}
		case "conversation.item.input_audio_transcription.completed":
			require.Equal(t, item, ev.str("item_id"))
			transcript = ev.str("transcript")
		}
	}
	t.Logf("%d deltas, %d before speech_stopped: %q; transcript %q", n, beforeStop, deltas, transcript)
	require.GreaterOrEqual(t, len(strings.Fields(transcript)), 4, "PocketSphinx heard the sentence")
	// Appended text: either the deltas make the transcript, or
	// PocketSphinx's final pass revised a word already sent, and the
	// completed transcript is the authority (docs/decisions.md).
	if sent := strings.Fields(deltas); len(sent) <= len(strings.Fields(transcript)) && slices.Equal(sent, strings.Fields(transcript)[:len(sent)]) {
		require.Equal(t, transcript, deltas)
	} else {
		t.Logf("the final pass revised the words sent")
	}
	require.Positive(t, beforeStop, "words streamed while the caller spoke")

	for _, ev := range session(false) {
		require.NotEqual(t, "conversation.item.input_audio_transcription.delta", ev.Type, "no input_audio_transcription, no deltas")
	}
}
