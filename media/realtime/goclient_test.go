package realtime

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	oairt "github.com/openai/openai-go/v3/realtime"
	"github.com/stretchr/testify/require"
)

// The official Go client (github.com/openai/openai-go/v3, its realtime
// WebSocket) drives the server unmodified: it connects with its own
// handshake and bearer key, configures a session with its typed
// session.update, sends a text turn and then espeak-ng speech as 24 kHz
// PCM16 appends, and decodes every server event with its typed union.

// goClientEvents collects what the client decoded, in order.
type goClientEvents struct {
	events chan oairt.RealtimeServerEventUnion
	errs   chan error
}

func (g *goClientEvents) next(t *testing.T, typ string) oairt.RealtimeServerEventUnion {
	t.Helper()
	deadline := time.After(10 * time.Second)
	var skipped []string
	for {
		select {
		case ev := <-g.events:
			if ev.Type == "error" {
				t.Fatalf("server error: %s", ev.RawJSON())
			}
			if ev.Type == typ {
				return ev
			}
			skipped = append(skipped, ev.Type)
		case err := <-g.errs:
			t.Fatalf("receive before %s: %v (after %v)", typ, err, skipped)
		case <-deadline:
			t.Fatalf("no %s within 10 s; got %v", typ, skipped)
		}
	}
}

// response reads one response to its response.done and returns its audio
// bytes, its transcript and the done event.
func (g *goClientEvents) response(t *testing.T) (int, string, oairt.ResponseDoneEvent) {
	t.Helper()
	id := g.next(t, "response.created").AsResponseCreatedEvent().Response.ID
	audio, transcript := 0, ""
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-g.events:
			switch ev.Type {
			case "error":
				t.Fatalf("server error: %s", ev.RawJSON())
			case "response.output_audio.delta":
				d := ev.AsResponseAudioDeltaEvent()
				require.Equal(t, id, d.ResponseID)
				b, err := base64.StdEncoding.DecodeString(d.Delta)
				require.NoError(t, err)
				audio += len(b)
			case "response.output_audio_transcript.delta":
				transcript += ev.AsResponseAudioTranscriptDeltaEvent().Delta
			case "response.done":
				done := ev.AsResponseDoneEvent()
				require.Equal(t, id, done.Response.ID)
				return audio, transcript, done
			}
		case err := <-g.errs:
			t.Fatalf("receive: %v", err)
		case <-deadline:
			t.Fatal("no response.done within 10 s")
		}
	}
}

func TestOfficialGoClient(t *testing.T) {
	e := newEnv(t, Config{})
	const heardText = "I would like to book a table."
	e.stt.text = []string{heardText}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	cl := openai.NewClient(option.WithBaseURL(e.http.URL+"/v1/"), option.WithAPIKey(goodKey))
	conn, err := cl.Realtime.Connect(ctx, oairt.RealtimeConnectionOptions{}, option.WithQuery("model", "gpt-realtime"))
	require.NoError(t, err)
	g := &goClientEvents{events: make(chan oairt.RealtimeServerEventUnion, 4096), errs: make(chan error, 1)}
	recvDone := make(chan struct{})
	go func() {
		defer close(recvDone)
		for {
			ev, err := conn.Recv(ctx)
			if err != nil {
				g.errs <- err
				return
			}
			g.events <- ev
		}
	}()
	t.Cleanup(func() { conn.Abort(); <-recvDone })

	created := g.next(t, "session.created").AsSessionCreatedEvent()
	require.Equal(t, "realtime", string(created.Session.AsRealtimeSessionCreateRequest().Type))

	pcm24k := &oairt.RealtimeAudioFormatsUnionParam{OfAudioPCM: &oairt.RealtimeAudioFormatsAudioPCMParam{Type: "audio/pcm", Rate: 24000}}
	update := oairt.RealtimeSessionCreateRequestParam{
		Instructions:     openai.String("You are a test agent."),
		Model:            "gpt-realtime",
		OutputModalities: []string{"audio"},
		Audio: oairt.RealtimeAudioConfigParam{
			Input: oairt.RealtimeAudioConfigInputParam{Format: *pcm24k, TurnDetection: oairt.RealtimeAudioInputTurnDetectionUnionParam{
				OfServerVad: &oairt.RealtimeAudioInputTurnDetectionServerVadParam{SilenceDurationMs: openai.Int(500)}}},
			Output: oairt.RealtimeAudioConfigOutputParam{Format: *pcm24k,
				Voice: oairt.RealtimeAudioConfigOutputVoiceUnionParam{OfString: openai.String("espeak:en-us")}},
		},
	}
	require.NoError(t, conn.Send(ctx, oairt.RealtimeClientEventParamOfSessionUpdate(update)))
	updated := g.next(t, "session.updated").AsSessionUpdatedEvent().Session.AsRealtimeSessionCreateRequest()
	require.Equal(t, "You are a test agent.", updated.Instructions)
	require.Equal(t, int64(24000), updated.Audio.Output.Format.Rate)
	require.Equal(t, "audio/pcm", updated.Audio.Input.Format.Type)

	// A text turn: the echo model repeats it, two words at 100 ms.
	require.NoError(t, conn.Send(ctx, oairt.RealtimeClientEventParamOfConversationItemCreate(oairt.RealtimeConversationItemUserMessageParam{
		Content: []oairt.RealtimeConversationItemUserMessageContentParam{{Type: "input_text", Text: openai.String("Hello there.")}}})))
	require.NoError(t, conn.Send(ctx, oairt.RealtimeClientEventUnionParam{OfResponseCreate: &oairt.ResponseCreateEventParam{}}))
	audio, transcript, done := g.response(t)
	require.Equal(t, "completed", string(done.Response.Status))
	require.Equal(t, "Hello there.", transcript)
	require.Equal(t, 2*2400*2, audio)

	// A spoken turn: espeak-ng speech as 24 kHz PCM16 in 100 ms appends.
	for _, chunk := range speechChunks(t, loadWAV(t, "caller16k.wav"), format{codecPCM, 24000}) {
		require.NoError(t, conn.Send(ctx, oairt.RealtimeClientEventParamOfInputAudioBufferAppend(base64.StdEncoding.EncodeToString(chunk))))
	}
	st := g.next(t, "input_audio_buffer.speech_started").AsInputAudioBufferSpeechStartedEvent()
	sp := g.next(t, "input_audio_buffer.speech_stopped").AsInputAudioBufferSpeechStoppedEvent()
	require.InDelta(t, 1000-300, st.AudioStartMs, 120)
	require.InDelta(t, 1000+2850, sp.AudioEndMs, 250)
	require.Equal(t, st.ItemID, sp.ItemID)
	tr := g.next(t, "conversation.item.input_audio_transcription.completed").AsConversationItemInputAudioTranscriptionCompletedEvent()
	require.Equal(t, heardText, tr.Transcript)
	require.Equal(t, st.ItemID, tr.ItemID)
	audio, transcript, done = g.response(t)
	require.Equal(t, "completed", string(done.Response.Status))
	require.Equal(t, heardText, transcript)
	// Seven words at 100 ms, 24 kHz PCM16.
	require.Equal(t, 7*2400*2, audio)
	require.Len(t, done.Response.Output, 1)
	item := done.Response.Output[0].AsRealtimeConversationItemAssistantMessage()
	require.Equal(t, "assistant", string(item.Role))
	require.Equal(t, heardText, item.Content[0].Transcript)
}
