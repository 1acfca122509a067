package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/codecs/resample"
	"github.com/voiced/voiced/codecs/wav"
	"github.com/voiced/voiced/media"
	"github.com/voiced/voiced/media/turn"
)

// callerFrame is one 20 ms caller frame at 16 kHz, the default input rate.
const callerFrame = 320

func serverVAD() *TurnDetection {
	return &TurnDetection{CreateResponse: true, InterruptResponse: true}
}

func TestTextTurnSpokenAnswer(t *testing.T) {
	checkGoroutines(t)
	lm := &fakeLLM{scripts: [][]llm.Chunk{say("Hello there. How are you today?")}}
	tts := &fakeTTS{wordMS: 100}
	m := newSim(t, Config{OutputRate: media.Rate24k, Instructions: "Be brief."}, Deps{LLM: lm, STT: &fakeSTT{}, TTS: tts})
	require.NoError(t, m.s.CreateItem("ev1", Item{Type: ItemMessage, Role: RoleUser, Content: []Content{{Type: InputText, Text: "Hi"}}}, ""))
	added := waitFor[ItemAdded](t, m.k, nil)
	require.Equal(t, "ev1", added.EventID)
	require.NoError(t, m.s.CreateResponse("ev2", ResponseOptions{}))
	done := m.untilDone(500)

	require.Equal(t, ResponseCompleted, done.Response.Status)
	require.Len(t, done.Response.Output, 1)
	msg := done.Response.Output[0]
	require.Equal(t, RoleAssistant, msg.Role)
	require.Equal(t, "Hello there. How are you today?", msg.Content[0].Transcript)
	// Two sentences of 2 and 4 words at 100 ms a word: 600 ms, 30 frames.
	require.Equal(t, 30, m.frames)
	require.Equal(t, int64(600), msg.Content[0].AudioMS)
	require.Equal(t, []string{"Hello there.", "How are you today?"}, tts.said())

	// The model saw the prompt and the user's words.
	req := lm.requests()[0]
	require.Equal(t, []llm.Message{{Role: llm.RoleSystem, Content: "Be brief."}, {Role: llm.RoleUser, Content: "Hi"}}, req.Messages)

	// Events in the realtime API's order.
	var order []string
	for _, e := range m.k.all() {
		switch e.(type) {
		case ResponseCreated:
			order = append(order, "created")
		case OutputItemAdded:
			order = append(order, "item")
		case ContentPartAdded:
			order = append(order, "part")
		case TextDelta:
			order = append(order, "delta")
		case AudioDone:
			order = append(order, "audio_done")
		case TextDone:
			order = append(order, "text_done")
		case ContentPartDone:
			order = append(order, "part_done")
		case OutputItemDone:
			order = append(order, "item_done")
		case ResponseDone:
			order = append(order, "done")
		}
	}
	require.Equal(t, []string{"created", "item", "part", "delta", "delta", "audio_done", "text_done", "part_done", "item_done", "done"}, order)
	turnEv := waitFor[Turn](t, m.k, func(tr Turn) bool { return tr.Role == RoleAssistant })
	require.Equal(t, "Hello there. How are you today?", turnEv.Text)
	require.False(t, turnEv.Interrupted)
}

func TestFirstSentencePlaysBeforeTheAnswerEnds(t *testing.T) {
	checkGoroutines(t)
	release := make(chan struct{})
	lm := &fakeLLM{release: release, scripts: [][]llm.Chunk{{{Text: "First part. Sec"}, {Text: "<wait>"}, {Text: "ond part."}, {FinishReason: "stop"}}}}
	m := newSim(t, Config{OutputRate: media.Rate16k}, Deps{LLM: lm, STT: &fakeSTT{}, TTS: &fakeTTS{wordMS: 100}})
	require.NoError(t, m.s.CreateResponse("", ResponseOptions{}))
	m.untilAudio(200)
	require.Equal(t, 0, count[ResponseDone](m.k))
	close(release)
	done := m.untilDone(500)
	require.Equal(t, "First part. Second part.", done.Response.Output[0].Content[0].Transcript)
	require.Equal(t, 20, m.frames)
}

func TestTextOnlyResponse(t *testing.T) {
	lm := &fakeLLM{scripts: [][]llm.Chunk{{{Text: "Two "}, {Text: "words"}, {FinishReason: "stop", Usage: &llm.Usage{PromptTokens: 5, CompletionTokens: 2, TotalTokens: 7}}}}}
	m := newSim(t, Config{}, Deps{LLM: lm, STT: &fakeSTT{}, TTS: &fakeTTS{wordMS: 100}})
	require.NoError(t, m.s.CreateResponse("", ResponseOptions{TextOnly: true, Instructions: "Other prompt"}))
	done := waitFor[ResponseDone](t, m.k, nil)
	require.Equal(t, "Two words", done.Response.Output[0].Content[0].Text)
	require.Equal(t, OutputText, done.Response.Output[0].Content[0].Type)
	require.Equal(t, Usage{InputTokens: 5, OutputTokens: 2, TotalTokens: 7}, done.Response.Usage)
	require.Equal(t, 2, count[TextDelta](m.k))
	require.Equal(t, "Other prompt", lm.requests()[0].Messages[0].Content)
	require.Zero(t, m.frames)
}

func TestSecondResponseRefusedWhileActive(t *testing.T) {
	lm := &fakeLLM{release: make(chan struct{}), scripts: [][]llm.Chunk{{{Text: "<wait>"}}}}
	m := newSim(t, Config{}, Deps{LLM: lm, STT: &fakeSTT{}, TTS: &fakeTTS{wordMS: 100}})
	require.NoError(t, m.s.CreateResponse("a", ResponseOptions{}))
	require.NoError(t, m.s.CreateResponse("b", ResponseOptions{}))
	e := waitFor[Error](t, m.k, nil)
	require.Equal(t, "b", e.EventID)
	require.Equal(t, "conversation_already_has_active_response", e.Code)
	require.NoError(t, m.s.CancelResponse("c", ""))
	done := waitFor[ResponseDone](t, m.k, nil)
	require.Equal(t, ResponseCancelled, done.Response.Status)
	require.Equal(t, ReasonClientCancelled, done.Response.Reason)
	require.NoError(t, m.s.CancelResponse("d", ""))
	e = waitFor[Error](t, m.k, func(e Error) bool { return e.EventID == "d" })
	require.Equal(t, "response_cancel_not_active", e.Code)
}

func TestVoiceTurnIsTranscribedAndAnswered(t *testing.T) {
	checkGoroutines(t)
	caller := loadWAV(t, "caller16k.wav")
	stt := &fakeSTT{answers: []string{"I would like to book a table for Friday evening."}}
	lm := &fakeLLM{scripts: [][]llm.Chunk{say("Sure.")}}
	m := newSim(t, Config{OutputRate: media.Rate16k, TurnDetection: serverVAD()}, Deps{LLM: lm, STT: stt, TTS: &fakeTTS{wordMS: 200}})
	m.ticks(25)
	m.speak(caller)
	m.ticks(30)
	started := waitFor[SpeechStarted](t, m.k, nil)
	stopped := waitFor[SpeechStopped](t, m.k, nil)
	committed := waitFor[InputCommitted](t, m.k, nil)
	require.Equal(t, started.ItemID, stopped.ItemID)
	require.Equal(t, started.ItemID, committed.ItemID)
	require.False(t, started.Interrupt)
	// Speech began ~0.5 s in; the turn reaches back 300 ms.
	require.InDelta(t, 500-300, started.AudioStartMS, 100)
	require.InDelta(t, 500+2800, stopped.AudioEndMS, 200)
	tr := waitFor[Transcription](t, m.k, nil)
	require.Equal(t, "I would like to book a table for Friday evening.", tr.Transcript)
	// The STT got the whole turn.
	require.Equal(t, []int{int(stopped.AudioEndMS-started.AudioStartMS) * 16}, stt.calls())
	done := m.untilDone(500)
	require.Equal(t, "Sure.", done.Response.Output[0].Content[0].Transcript)
	user := waitFor[Turn](t, m.k, func(tr Turn) bool { return tr.Role == RoleUser })
	require.Equal(t, m.s.Start().Add(time.Duration(started.AudioStartMS)*time.Millisecond), user.Start)
	require.Equal(t, lm.requests()[0].Messages[1], llm.Message{Role: llm.RoleUser, Content: "I would like to book a table for Friday evening."})
}

// TestNarrowbandTurn: a session listening at 8 kHz (a G.711 call's
// frames as decoded) finds the same turn in the same audio as at 16 kHz,
// and its STT gets the turn at 16 kHz, as long as the turn.
func TestNarrowbandTurn(t *testing.T) {
	checkGoroutines(t)
	_, err := New(Config{InputRate: media.Rate24k}, nil, Deps{LLM: &fakeLLM{}, STT: &fakeSTT{}, TTS: &fakeTTS{}}, newSink())
	require.ErrorIs(t, err, ErrConfig, "8 or 16 kHz only")
	rs, err := resample.New(media.Rate16k, media.Rate8k, resample.QualityHigh)
	require.NoError(t, err)
	caller16 := loadWAV(t, "caller16k.wav")
	caller := make([]int16, rs.OutputLen(len(caller16)))
	n, err := rs.ProcessTo(caller, caller16)
	require.NoError(t, err)
	caller = caller[:n]
	stt := &fakeSTT{answers: []string{"I would like to book a table for Friday evening."}}
	lm := &fakeLLM{scripts: [][]llm.Chunk{say("Sure.")}}
	m := newSim(t, Config{InputRate: media.Rate8k, OutputRate: media.Rate8k, TurnDetection: serverVAD()}, Deps{LLM: lm, STT: stt, TTS: &fakeTTS{wordMS: 200}})
	require.ErrorIs(t, m.s.WriteFrame(make([]int16, callerFrame)), ErrFrameSize, "a 16 kHz frame")
	m.ticks(25)
	m.speak(caller)
	m.ticks(30)
	started := waitFor[SpeechStarted](t, m.k, nil)
	stopped := waitFor[SpeechStopped](t, m.k, nil)
	// As TestVoiceTurnIsTranscribedAndAnswered at 16 kHz.
	require.InDelta(t, 500-300, started.AudioStartMS, 100)
	require.InDelta(t, 500+2800, stopped.AudioEndMS, 200)
	tr := waitFor[Transcription](t, m.k, nil)
	require.Equal(t, "I would like to book a table for Friday evening.", tr.Transcript)
	require.Equal(t, []int{int(stopped.AudioEndMS-started.AudioStartMS) * 16}, stt.calls(), "the whole turn, at 16 kHz")
	done := m.untilDone(500)
	require.Equal(t, "Sure.", done.Response.Output[0].Content[0].Transcript)
}

// TestTo16k: a turn at 8 kHz comes up to 16 kHz twice as long and in
// time: a click stays where it was.
func TestTo16k(t *testing.T) {
	pcm := make([]int16, 8000)
	pcm[4000] = 20000
	up, err := to16k(pcm, media.Rate8k)
	require.NoError(t, err)
	require.Len(t, up, 16000)
	peak := 0
	for i, v := range up {
		if v > up[peak] {
			peak = i
		}
	}
	require.InDelta(t, 8000, peak, 1, "the click stays at 0.5 s")
	same, err := to16k(pcm, media.Rate16k)
	require.NoError(t, err)
	require.Equal(t, pcm, same)
}

func TestManualCommitAndClear(t *testing.T) {
	stt := &fakeSTT{answers: []string{"hello"}}
	m := newSim(t, Config{OutputRate: media.Rate16k}, Deps{LLM: &fakeLLM{}, STT: stt, TTS: &fakeTTS{wordMS: 100}})
	require.NoError(t, m.s.CommitInput("e0"))
	e := waitFor[Error](t, m.k, nil)
	require.Equal(t, "input_audio_buffer_commit_empty", e.Code)
	m.ticks(10)
	require.NoError(t, m.s.ClearInput("e1"))
	require.Equal(t, "e1", waitFor[InputCleared](t, m.k, nil).EventID)
	m.ticks(25)
	require.NoError(t, m.s.CommitInput("e2"))
	c := waitFor[InputCommitted](t, m.k, nil)
	require.Equal(t, "e2", c.EventID)
	tr := waitFor[Transcription](t, m.k, nil)
	require.Equal(t, "hello", tr.Transcript)
	require.Equal(t, []int{25 * callerFrame}, stt.calls())
	// Manual turns are not answered on their own.
	time.Sleep(20 * time.Millisecond)
	require.Zero(t, count[ResponseCreated](m.k))
}

// bargeInSim is a session speaking a long answer with a recorded voice,
// whose echo returns 100 ms later 10 dB down into the caller's microphone.
func bargeInSim(t *testing.T, stt *fakeSTT) *sim {
	agent := loadWAV(t, "agent16k.wav")
	long := append(append(append([]int16(nil), agent...), agent...), agent...)
	lm := &fakeLLM{scripts: [][]llm.Chunk{say("Let me tell you all about it."), say("Okay, Saturday then.")}}
	m := newSim(t, Config{OutputRate: media.Rate16k, TurnDetection: serverVAD(), DSP: dspAEC()},
		Deps{LLM: lm, STT: stt, TTS: &fakeTTS{pcm: long}})
	m.echoFrames, m.echoGain = 5, 0.316
	require.NoError(t, m.s.CreateResponse("", ResponseOptions{}))
	m.untilAudio(200)
	return m
}

func TestBargeInStopsAudioWithinAFrame(t *testing.T) {
	checkGoroutines(t)
	stt := &fakeSTT{answers: []string{"Wait, sorry, can we make that Saturday instead?"}}
	m := bargeInSim(t, stt)
	// The agent talks for 4 s over its own echo: no barge-in.
	m.ticks(200)
	require.Zero(t, count[SpeechStarted](m.k))
	// The caller interrupts.
	talk := loadWAV(t, "interrupt16k.wav")
	onset, _ := activeSpan(talk, callerFrame)
	onset += len(m.reads)
	decided := -1
	for i := 0; i+callerFrame <= len(talk); i += callerFrame {
		m.tick(talk[i : i+callerFrame])
		if decided < 0 && m.s.in.det.Speaking() {
			decided = len(m.reads)
		}
	}
	require.Positive(t, decided, "no barge-in")
	// The agent's audio paused within 150 ms of the caller's onset, long
	// before the decision (and again after the caller's pause for breath,
	// if it resumed meanwhile).
	require.Positive(t, m.fades)
	silent := slices.Index(m.reads[onset:], nil)
	require.GreaterOrEqual(t, silent, 0)
	require.LessOrEqual(t, silent, 7, "frames from the onset to the fade")
	require.Less(t, onset+silent, decided-20)
	before := 0
	for _, p := range m.reads[:onset+silent] {
		if p != nil {
			before++
		}
	}
	paused := waitFor[PlayoutPaused](t, m.k, nil)
	require.Equal(t, int64(before)*20, paused.AudioMS, "paused where the audio stopped")
	// The decision was taken in the caller frame of tick decided-1; every
	// read after it is silent.
	for i, p := range m.reads[decided:] {
		require.Nil(t, p, "agent audio %d frames after the barge-in decision", i+1)
	}
	played := int64(0)
	for _, p := range m.reads {
		if p != nil {
			played++
		}
	}
	started := waitFor[SpeechStarted](t, m.k, nil)
	require.True(t, started.Interrupt)
	m.ticks(30)
	done := waitFor[ResponseDone](t, m.k, nil)
	require.Equal(t, ResponseCancelled, done.Response.Status)
	require.Equal(t, ReasonTurnDetected, done.Response.Reason)
	msg := done.Response.Output[0]
	require.Equal(t, StatusIncomplete, msg.Status)
	// The item holds exactly the audio that left.
	require.Equal(t, played*20, msg.Content[0].AudioMS)
	require.NotEqual(t, "Let me tell you all about it.", msg.Content[0].Transcript)
	cut := waitFor[ItemTruncated](t, m.k, nil)
	require.Equal(t, ItemTruncated{ItemID: msg.ID, AudioEndMS: played * 20}, cut)
	tr := waitFor[Turn](t, m.k, func(tr Turn) bool { return tr.Role == RoleAssistant })
	require.True(t, tr.Interrupted)
	// Then the caller's words are answered.
	second := waitFor[ResponseCreated](t, m.k, func(r ResponseCreated) bool { return r.Response.ID != done.Response.ID })
	require.NotEmpty(t, second.Response.ID)
}

func TestFalseInterruptionResumes(t *testing.T) {
	checkGoroutines(t)
	m := bargeInSim(t, &fakeSTT{answers: []string{""}})
	m.ticks(200)
	talk := loadWAV(t, "interrupt16k.wav")
	m.speak(talk)
	require.True(t, waitFor[SpeechStarted](t, m.k, nil).Interrupt)
	before := m.frames
	m.ticks(40) // the turn ends, its transcript is empty
	waitFor[Transcription](t, m.k, nil)
	done := m.untilDone(1000)
	require.Greater(t, m.frames, before, "resumed")
	require.Equal(t, ResponseCompleted, done.Response.Status)
	// Everything was played: three times the recording.
	require.Equal(t, int64(m.frames)*20, done.Response.Output[0].Content[0].AudioMS)
	require.Equal(t, int(3*len(loadWAV(t, "agent16k.wav"))+callerFrame-1)/callerFrame, m.frames)
	require.Equal(t, 1, count[ResponseCreated](m.k))
}

func TestBackchannelDoesNotInterrupt(t *testing.T) {
	m := bargeInSim(t, &fakeSTT{answers: []string{"uh-huh"}})
	m.ticks(200)
	m.speak(loadWAV(t, "uhhuh16k.wav"))
	done := m.untilDone(1000)
	require.Equal(t, ResponseCompleted, done.Response.Status)
	require.Zero(t, count[SpeechStarted](m.k))
	// It paused the agent, which then carried on from where it paused.
	paused := waitFor[PlayoutPaused](t, m.k, nil)
	resumed := waitFor[PlayoutResumed](t, m.k, nil)
	require.Equal(t, paused.AudioMS, resumed.AudioMS)
	require.Equal(t, 1, m.fades)
	require.Equal(t, int(3*len(loadWAV(t, "agent16k.wav"))+callerFrame-1)/callerFrame, m.frames)
}

func TestClientTruncate(t *testing.T) {
	m := newSim(t, Config{OutputRate: media.Rate16k}, Deps{LLM: &fakeLLM{scripts: [][]llm.Chunk{say("one two three four five six seven eight nine ten")}},
		STT: &fakeSTT{}, TTS: &fakeTTS{wordMS: 100}})
	require.NoError(t, m.s.CreateResponse("", ResponseOptions{}))
	m.untilAudio(100)
	m.ticks(24) // 500 ms played
	item := waitFor[OutputItemAdded](t, m.k, nil).Item.ID
	require.NoError(t, m.s.TruncateItem("t1", item, 0, 300))
	tr := waitFor[ItemTruncated](t, m.k, nil)
	require.Equal(t, ItemTruncated{EventID: "t1", ItemID: item, AudioEndMS: 300}, tr)
	done := waitFor[ResponseDone](t, m.k, nil)
	require.Equal(t, ResponseCancelled, done.Response.Status)
	require.Equal(t, "one two three", done.Response.Output[0].Content[0].Transcript)
	require.Equal(t, int64(300), done.Response.Output[0].Content[0].AudioMS)
	// A finished item can be truncated further, not extended.
	require.NoError(t, m.s.TruncateItem("t2", item, 0, 400))
	require.Equal(t, "audio_end_ms", waitFor[Error](t, m.k, nil).Param)
	require.NoError(t, m.s.TruncateItem("t3", item, 0, 100))
	waitFor[ItemTruncated](t, m.k, func(e ItemTruncated) bool { return e.EventID == "t3" })
	require.NoError(t, m.s.RetrieveItem("r", item))
	got := waitFor[ItemRetrieved](t, m.k, nil)
	require.Equal(t, "one", got.Item.Content[0].Transcript)
	require.NoError(t, m.s.DeleteItem("d", item))
	require.Equal(t, item, waitFor[ItemDeleted](t, m.k, nil).ItemID)
	require.NoError(t, m.s.DeleteItem("d2", item))
	require.Equal(t, "item_not_found", waitFor[Error](t, m.k, func(e Error) bool { return e.EventID == "d2" }).Code)
}

func TestClientToolRoundTrip(t *testing.T) {
	lm := &fakeLLM{scripts: [][]llm.Chunk{
		{{ToolCall: &llm.ToolCall{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}, {FinishReason: "tool_calls"}},
		say("It is sunny in Paris."),
	}}
	tools := []llm.Tool{{Name: "get_weather", Description: "Weather", Parameters: []byte(`{"type":"object"}`)}}
	m := newSim(t, Config{OutputRate: media.Rate16k, Tools: tools}, Deps{LLM: lm, STT: &fakeSTT{}, TTS: &fakeTTS{wordMS: 50}})
	require.NoError(t, m.s.CreateResponse("", ResponseOptions{}))
	done := m.untilDone(100)
	require.Equal(t, ResponseCompleted, done.Response.Status)
	require.Len(t, done.Response.Output, 1)
	call := done.Response.Output[0]
	require.Equal(t, ItemFunctionCall, call.Type)
	require.Equal(t, "get_weather", call.Name)
	args := waitFor[ArgumentsDone](t, m.k, nil)
	require.Equal(t, `{"city":"Paris"}`, args.Arguments)
	require.Equal(t, "call_1", args.CallID)
	require.Equal(t, tools, lm.requests()[0].Tools)
	// As OpenAI's server: the call is added in progress without arguments
	// and done completed with them (clients run a tool on a completed
	// function_call, so a completed one in both ran it twice).
	added := waitFor[OutputItemAdded](t, m.k, nil)
	require.Equal(t, StatusInProgress, added.Item.Status)
	require.Empty(t, added.Item.Arguments)
	doneItem := waitFor[OutputItemDone](t, m.k, nil)
	require.Equal(t, StatusCompleted, doneItem.Item.Status)
	require.Equal(t, `{"city":"Paris"}`, doneItem.Item.Arguments)

	// The client runs it and asks again.
	require.NoError(t, m.s.CreateItem("o", Item{Type: ItemFunctionCallOutput, CallID: "call_1", Output: `{"sky":"sunny"}`}, ""))
	res := waitFor[ToolResult](t, m.k, nil)
	require.Equal(t, "get_weather", res.Name)
	// A second output for the same call is refused; the first stands.
	require.NoError(t, m.s.CreateItem("o2", Item{Type: ItemFunctionCallOutput, CallID: "call_1", Output: `{"sky":"grey"}`}, ""))
	dup := waitFor[Error](t, m.k, func(e Error) bool { return e.EventID == "o2" })
	require.Equal(t, "item_already_exists", dup.Code)
	require.Equal(t, "item.call_id", dup.Param)
	require.Equal(t, 1, count[ToolResult](m.k))
	require.NoError(t, m.s.CreateResponse("", ResponseOptions{}))
	waitFor[ResponseCreated](t, m.k, func(r ResponseCreated) bool { return r.Response.ID != done.Response.ID })
	msgs := lm.waitRequests(t, 2)[1].Messages
	require.Equal(t, llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}}, msgs[1])
	require.Equal(t, llm.Message{Role: llm.RoleTool, ToolCallID: "call_1", Content: `{"sky":"sunny"}`}, msgs[2])
}

type runner struct{ calls []llm.ToolCall }

func (r *runner) RunTool(_ context.Context, c llm.ToolCall) (string, error) {
	r.calls = append(r.calls, c)
	if c.Name == "broken" {
		return "", errors.New("backend down")
	}
	return `{"ok":true}`, nil
}

func TestServerToolsAnswerOnTheirOwn(t *testing.T) {
	lm := &fakeLLM{scripts: [][]llm.Chunk{
		{{ToolCall: &llm.ToolCall{ID: "c1", Name: "book", Arguments: `{}`}}, {ToolCall: &llm.ToolCall{ID: "c2", Name: "broken"}}, {FinishReason: "tool_calls"}},
		say("Booked."),
	}}
	m := newSim(t, Config{OutputRate: media.Rate16k, Tools: []llm.Tool{{Name: "book"}, {Name: "broken"}}},
		Deps{LLM: lm, STT: &fakeSTT{}, TTS: &fakeTTS{wordMS: 50}, Tools: &runner{}})
	require.NoError(t, m.s.CreateResponse("", ResponseOptions{}))
	second := waitFor[ResponseCreated](t, m.k, func(r ResponseCreated) bool { return count[ResponseDone](m.k) > 0 })
	require.NotEmpty(t, second.Response.ID)
	msgs := lm.waitRequests(t, 2)[1].Messages
	require.Equal(t, llm.RoleTool, msgs[2].Role)
	require.Equal(t, `{"ok":true}`, msgs[2].Content)
	require.Equal(t, `{"error":"backend down"}`, msgs[3].Content)
	results := 0
	for _, e := range m.k.all() {
		if r, ok := e.(ToolResult); ok {
			results++
			require.Equal(t, r.Name == "broken", r.IsError)
		}
	}
	require.Equal(t, 2, results)
}

func TestEndCallAfterGoodbye(t *testing.T) {
	checkGoroutines(t)
	lm := &fakeLLM{scripts: [][]llm.Chunk{{{Text: "Goodbye!"}, {ToolCall: &llm.ToolCall{ID: "x", Name: EndCallTool, Arguments: "{}"}}, {FinishReason: "tool_calls"}}}}
	m := newSim(t, Config{OutputRate: media.Rate16k, EndCall: true}, Deps{LLM: lm, STT: &fakeSTT{}, TTS: &fakeTTS{wordMS: 200}})
	require.NoError(t, m.s.CreateResponse("", ResponseOptions{}))
	m.untilDone(1000)
	require.Equal(t, 10, m.frames, "the goodbye is played before the end")
	require.Equal(t, "agent_end", waitFor[Ended](t, m.k, nil).Reason)
	require.Equal(t, EndCallTool, lm.requests()[0].Tools[0].Name)
	require.Zero(t, count[ArgumentsDone](m.k), "end_call is not a client tool")
}

func TestPlaceholderWhileSlow(t *testing.T) {
	release := make(chan struct{})
	lm := &fakeLLM{release: release, scripts: [][]llm.Chunk{{{Text: "<wait>"}, {Text: "The answer is four."}, {FinishReason: "stop"}}}}
	tts := &fakeTTS{wordMS: 100}
	m := newSim(t, Config{OutputRate: media.Rate16k, Placeholders: []string{"One moment please."}, PlaceholderDelay: 30 * time.Millisecond},
		Deps{LLM: lm, STT: &fakeSTT{}, TTS: tts})
	require.NoError(t, m.s.CreateResponse("", ResponseOptions{}))
	m.untilAudio(500)
	close(release)
	done := m.untilDone(500)
	require.Equal(t, []string{"One moment please.", "The answer is four."}, tts.said())
	require.Equal(t, "The answer is four.", done.Response.Output[0].Content[0].Transcript)
	require.Equal(t, 35, m.frames)
}

func TestSpeakFirstWithFirstMessage(t *testing.T) {
	lm := &fakeLLM{}
	m := newSim(t, Config{OutputRate: media.Rate16k, SpeakFirst: true, FirstMessage: "Thanks for calling Acme."},
		Deps{LLM: lm, STT: &fakeSTT{}, TTS: &fakeTTS{wordMS: 100}})
	done := m.untilDone(200)
	require.Equal(t, "Thanks for calling Acme.", done.Response.Output[0].Content[0].Transcript)
	require.Empty(t, lm.requests())
	require.Equal(t, 20, m.frames)
}

func TestSpeakFirstFromPrompt(t *testing.T) {
	lm := &fakeLLM{scripts: [][]llm.Chunk{say("Hi, this is Acme.")}}
	m := newSim(t, Config{OutputRate: media.Rate16k, SpeakFirst: true}, Deps{LLM: lm, STT: &fakeSTT{}, TTS: &fakeTTS{wordMS: 100}})
	m.untilDone(200)
	require.Len(t, lm.waitRequests(t, 1)[0].Messages, 1, "the prompt alone")
}

func TestSilenceCheckinsThenHangUp(t *testing.T) {
	tts := &fakeTTS{wordMS: 100}
	m := newSim(t, Config{OutputRate: media.Rate16k, TurnDetection: serverVAD(), CheckinInterval: 200 * time.Millisecond, MaxCheckins: 2},
		Deps{LLM: &fakeLLM{}, STT: &fakeSTT{}, TTS: tts})
	for range 400 {
		m.tick(nil)
		if count[Ended](m.k) > 0 {
			break
		}
		time.Sleep(100 * time.Microsecond)
	}
	require.Equal(t, "silence", waitFor[Ended](t, m.k, nil).Reason)
	require.Equal(t, []string{DefaultCheckin, DefaultCheckin}, tts.said())
	require.Zero(t, count[InputTimeout](m.k))
}

func TestIdleTimeoutInlineSession(t *testing.T) {
	td := serverVAD()
	td.Turn = turn.Config{IdleTimeout: 200 * time.Millisecond}
	lm := &fakeLLM{scripts: [][]llm.Chunk{say("Still there?")}}
	m := newSim(t, Config{OutputRate: media.Rate16k, TurnDetection: td}, Deps{LLM: lm, STT: &fakeSTT{}, TTS: &fakeTTS{wordMS: 100}})
	m.ticks(10)
	to := waitFor[InputTimeout](t, m.k, nil)
	require.Equal(t, int64(200), to.AudioEndMS-to.AudioStartMS)
	m.untilDone(100)
}

func TestMaxDuration(t *testing.T) {
	checkGoroutines(t)
	m := newSim(t, Config{MaxDuration: 30 * time.Millisecond}, Deps{LLM: &fakeLLM{}, STT: &fakeSTT{}, TTS: &fakeTTS{}})
	require.Equal(t, "timeout", waitFor[Ended](t, m.k, nil).Reason)
	require.NoError(t, m.s.CreateResponse("", ResponseOptions{}))
	time.Sleep(10 * time.Millisecond)
	require.Zero(t, count[ResponseCreated](m.k), "nothing starts after the end")
}

func TestLoopbackPlaysTheTurnBack(t *testing.T) {
	checkGoroutines(t)
	caller := loadWAV(t, "caller16k.wav")
	m := newSim(t, Config{Loopback: true, OutputRate: media.Rate24k, TurnDetection: serverVAD()}, Deps{})
	m.ticks(25)
	m.speak(caller)
	m.ticks(30)
	stopped := waitFor[SpeechStopped](t, m.k, nil)
	started := waitFor[SpeechStarted](t, m.k, nil)
	done := m.untilDone(500)
	require.Equal(t, ResponseCompleted, done.Response.Status)
	turnMS := stopped.AudioEndMS - started.AudioStartMS
	require.Equal(t, int(turnMS/20), m.frames)
	require.Zero(t, count[Transcription](m.k))
}

func TestRecordingHasBothLegs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec", "call.wav")
	lm := &fakeLLM{scripts: [][]llm.Chunk{say("one two three four five")}}
	m := newSim(t, Config{OutputRate: media.Rate24k, RecordPath: path}, Deps{LLM: lm, STT: &fakeSTT{}, TTS: &fakeTTS{wordMS: 200}})
	caller := loadWAV(t, "yes16k.wav")
	m.speak(caller)
	require.NoError(t, m.s.CreateResponse("", ResponseOptions{}))
	m.untilDone(300)
	m.ticks(5)
	require.NoError(t, m.s.Close())
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	format, pcm, err := wav.ReadAll(f)
	require.NoError(t, err)
	require.Equal(t, wav.Format{Encoding: wav.PCM16, SampleRate: 16000, Channels: 2}, format)
	frames := len(pcm) / 2 / callerFrame
	require.Equal(t, len(m.reads), frames, "one stereo frame per caller frame")
	var left, right float64
	for i := 0; i < len(pcm); i += 2 {
		left += float64(pcm[i]) * float64(pcm[i])
		right += float64(pcm[i+1]) * float64(pcm[i+1])
	}
	require.Greater(t, left, 1e9, "caller leg")
	require.Greater(t, right, 1e9, "agent leg")
	// The agent's second of speech is on the right, where it was read.
	first := -1
	for i, p := range m.reads {
		if p != nil {
			first = i
			break
		}
	}
	require.Positive(t, first)
	var before, during float64
	for i := range callerFrame {
		before += float64(pcm[2*((first-1)*callerFrame+i)+1])
		during += float64(pcm[2*((first+2)*callerFrame+i)+1]) * float64(pcm[2*((first+2)*callerFrame+i)+1])
	}
	require.Zero(t, before)
	require.Positive(t, during)
}

func TestReadFrameAllocatesNothing(t *testing.T) {
	lm := &fakeLLM{scripts: [][]llm.Chunk{say("one two three four five six seven eight nine ten eleven twelve")}}
	m := newSim(t, Config{OutputRate: media.Rate24k, DSP: dspAEC()}, Deps{LLM: lm, STT: &fakeSTT{}, TTS: &fakeTTS{wordMS: 400}})
	require.NoError(t, m.s.CreateResponse("", ResponseOptions{}))
	m.untilAudio(100)
	m.ready()
	out := make([]int16, 480)
	allocs := testing.AllocsPerRun(100, func() { m.s.ReadFrame(out) })
	require.Zero(t, allocs)
	frame := make([]int16, callerFrame)
	allocs = testing.AllocsPerRun(100, func() { require.NoError(t, m.s.WriteFrame(frame)) })
	require.Zero(t, allocs)
}

// TestWriteFrameDoesNotGrow: over a new session's first 4 s of caller
// audio the input buffer keeps the memory it started with, with turn
// detection (which keeps the last second or two before a turn) and in
// manual mode (which keeps everything until a commit): it has its room up
// front instead of growing, an allocation and a copy each time, on the
// pacer.
func TestWriteFrameDoesNotGrow(t *testing.T) {
	for _, td := range []*TurnDetection{serverVAD(), nil} {
		m := newSim(t, Config{Loopback: true, OutputRate: media.Rate16k, TurnDetection: td}, Deps{})
		frame := make([]int16, callerFrame)
		mem := unsafe.SliceData(m.s.in.buf)
		for range initialFrames {
			require.NoError(t, m.s.WriteFrame(frame))
		}
		require.Positive(t, len(m.s.in.buf))
		require.Same(t, mem, unsafe.SliceData(m.s.in.buf), "turn detection %v: the buffer grew", td != nil)
	}
}

func TestNewErrors(t *testing.T) {
	_, err := New(Config{}, nil, Deps{}, newSink())
	require.ErrorIs(t, err, ErrNoProvider)
	_, err = New(Config{OutputRate: 11025}, nil, Deps{}, newSink())
	require.ErrorIs(t, err, media.ErrUnsupportedRate)
	_, err = New(Config{Loopback: true}, nil, Deps{}, nil)
	require.ErrorIs(t, err, ErrConfig)
	_, err = New(Config{Loopback: true, MaxDuration: -1}, nil, Deps{}, newSink())
	require.ErrorIs(t, err, ErrConfig)
	s, err := New(Config{Loopback: true}, nil, Deps{}, newSink())
	require.NoError(t, err)
	require.ErrorIs(t, s.WriteFrame(make([]int16, 10)), ErrFrameSize)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	require.ErrorIs(t, s.CreateResponse("", ResponseOptions{}), ErrClosed)
	require.ErrorIs(t, s.WriteFrame(make([]int16, callerFrame)), ErrClosed)
}

func TestRecordingWithoutCallerAudio(t *testing.T) {
	// A text session: the caller sends no audio, the agent still speaks
	// and its leg is recorded against silence.
	path := filepath.Join(t.TempDir(), "call.wav")
	lm := &fakeLLM{scripts: [][]llm.Chunk{say("one two three four five")}}
	k := newSink()
	s, err := New(Config{OutputRate: media.Rate8k, RecordPath: path}, nil, Deps{LLM: lm, STT: &fakeSTT{}, TTS: &fakeTTS{wordMS: 200}}, k)
	require.NoError(t, err)
	require.NoError(t, s.CreateResponse("", ResponseOptions{}))
	out := make([]int16, 160)
	heard := 0
	for count[ResponseDone](k) == 0 {
		if s.ReadFrame(out) != nil {
			heard++
		}
		time.Sleep(time.Millisecond)
	}
	require.NoError(t, s.Close())
	require.Equal(t, 50, heard)
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	format, pcm, err := wav.ReadAll(f)
	require.NoError(t, err)
	var left, right float64
	for i := 0; i < len(pcm); i += 2 {
		left += float64(pcm[i]) * float64(pcm[i])
		right += float64(pcm[i+1]) * float64(pcm[i+1])
	}
	require.Zero(t, left)
	require.Greater(t, right, 1e9)
	require.GreaterOrEqual(t, len(pcm)/2, 50*format.SampleRate/50, "every tick is in the file")
}

// TestCommittedTurnUsesTheSpare: once the loop has received a turn it
// leaves a buffer for the next, a quarter larger, and the input side
// copies the next turn into it instead of allocating on the pacer; a turn
// that does not fit allocates as before.
func TestCommittedTurnUsesTheSpare(t *testing.T) {
	k := newSink()
	s, err := New(Config{Loopback: true, OutputRate: media.Rate16k}, nil, Deps{}, k)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	frame := make([]int16, callerFrame)
	for i := range frame {
		frame[i] = int16(i * 37)
	}
	turn := func(frames int) []int16 {
		for range frames {
			require.NoError(t, s.WriteFrame(frame))
		}
		return s.in.take(s.in.start, s.in.n)
	}
	first := turn(100)
	require.Len(t, first, 100*callerFrame)
	require.Empty(t, s.spare, "no turn received yet, no spare")
	s.spareTurn(len(first)) // what the loop does when the turn arrives
	sp := <-s.spare
	require.Equal(t, 125*callerFrame, cap(sp))
	s.spare <- sp

	second := turn(110)
	require.Len(t, second, 110*callerFrame)
	require.Same(t, unsafe.SliceData(sp[:1]), unsafe.SliceData(second), "the turn went into the spare")
	require.Equal(t, frame, second[:callerFrame])

	s.spareTurn(len(second))
	third := turn(200) // longer than the spare (137.5 frames): allocated
	require.Len(t, third, 200*callerFrame)
	require.Empty(t, s.spare, "the spare that did not fit was dropped")
	require.Equal(t, frame, third[199*callerFrame:])
}

// The loop leaves the spare when it receives a committed turn.
func TestCommitLeavesASpare(t *testing.T) {
	m := newSim(t, Config{Loopback: true, OutputRate: media.Rate16k}, Deps{})
	frame := make([]int16, callerFrame)
	for range 50 {
		require.NoError(t, m.s.WriteFrame(frame))
	}
	require.NoError(t, m.s.CommitInput(""))
	require.Eventually(t, func() bool { return len(m.s.spare) == 1 }, 2*time.Second, time.Millisecond)
}

// spareTurn takes the turn buffer that came back when it is large enough.
func TestSpareIsARecycledTurn(t *testing.T) {
	s, err := New(Config{Loopback: true}, nil, Deps{}, newSink())
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	old := make([]int16, 500, 1000)
	s.recycleTurn(old)
	s.spareTurn(1000)
	sp := <-s.spare
	require.Same(t, unsafe.SliceData(old), unsafe.SliceData(sp[:1]), "the returned buffer is the spare")
	require.Empty(t, sp)

	s.recycleTurn(make([]int16, 0, 799))
	s.spareTurn(800)
	sp = <-s.spare
	require.Equal(t, 1000, cap(sp), "one too small is dropped for a new one, a quarter larger")
	require.Empty(t, s.freeTurn)

	s.spare <- sp
	s.recycleTurn(old)
	s.spareTurn(800)
	require.Len(t, s.freeTurn, 1, "with a spare waiting the returned one stays")
	s.recycleTurn(make([]int16, 10))
	require.Same(t, unsafe.SliceData(old), unsafe.SliceData((<-s.freeTurn)[:1]), "one is kept")
	s.recycleTurn(nil)
	require.Empty(t, s.freeTurn)
}

// A turn comes back once it has been played back (loopback) or
// transcribed, and the turn after the next goes into it.
func TestTurnsComeBack(t *testing.T) {
	caller := loadWAV(t, "caller16k.wav")
	t.Run("loopback", func(t *testing.T) {
		m := newSim(t, Config{Loopback: true, OutputRate: media.Rate16k, TurnDetection: serverVAD()}, Deps{})
		turn := func(n int) {
			m.ticks(25)
			m.speak(caller)
			m.ticks(30)
			for i := 0; count[ResponseDone](m.k) < n; i++ {
				require.Less(t, i, 2000, "no response.done %d", n)
				if !m.tick(nil) {
					time.Sleep(100 * time.Microsecond)
				}
			}
			require.Eventually(t, func() bool { return len(m.s.freeTurn) == 1 }, 2*time.Second, time.Millisecond)
		}
		turn(1)
		// The first turn was allocated (no spare yet); its commit left a
		// spare a quarter larger, which the second turn goes into.
		spare := <-m.s.spare
		m.s.spare <- spare
		turn(2)
		back := <-m.s.freeTurn
		require.Same(t, unsafe.SliceData(spare[:1]), unsafe.SliceData(back[:1]), "the second turn, played, came back")
		m.s.freeTurn <- back
		// The third turn's commit leaves the second's buffer as the spare.
		<-m.s.spare
		m.s.spareTurn(len(back))
		require.Same(t, unsafe.SliceData(back[:1]), unsafe.SliceData((<-m.s.spare)[:1]), "the spare after the third turn")
	})
	t.Run("transcribed", func(t *testing.T) {
		stt := &fakeSTT{answers: []string{"hello"}}
		m := newSim(t, Config{OutputRate: media.Rate16k, TurnDetection: &TurnDetection{}}, Deps{LLM: &fakeLLM{}, STT: stt, TTS: &fakeTTS{wordMS: 100}})
		m.ticks(25)
		m.speak(caller)
		m.ticks(30)
		waitFor[Transcription](t, m.k, nil)
		require.Len(t, stt.calls(), 1)
		require.Eventually(t, func() bool { return len(m.s.freeTurn) == 1 }, 2*time.Second, time.Millisecond)
		back := <-m.s.freeTurn
		require.GreaterOrEqual(t, cap(back), stt.calls()[0], "the transcribed turn's buffer")
	})
}

// A turn the caller cut short ends with the last frame the caller heard,
// not when the engine finished deciding (after the caller's words were
// transcribed, or at the hang-up): the transcript's timing must agree
// with the recording (issue 30).
func TestInterruptedTurnEndsWhereItWasCut(t *testing.T) {
	checkGoroutines(t)
	m := bargeInSim(t, &fakeSTT{answers: []string{"Wait, sorry, can we make that Saturday instead?"}})
	m.ticks(50)
	talk := loadWAV(t, "interrupt16k.wav")
	var cutAt time.Time
	for i := 0; i+callerFrame <= len(talk); i += callerFrame {
		m.tick(talk[i : i+callerFrame])
		if cutAt.IsZero() && m.s.in.det.Speaking() {
			// The agent is silent from here on; the engine decides once
			// the caller's turn is over, well after.
			cutAt = time.Now()
			time.Sleep(300 * time.Millisecond)
		}
	}
	require.False(t, cutAt.IsZero(), "no barge-in")
	m.ticks(30)
	tr := waitFor[Turn](t, m.k, func(tr Turn) bool { return tr.Role == RoleAssistant })
	require.True(t, tr.Interrupted)
	require.False(t, tr.End.After(cutAt.Add(media.FrameDuration)), "turn ends %v after the cut", tr.End.Sub(cutAt))
	require.True(t, tr.End.After(tr.Start))
	// It lasted as long as the audio that left (the sim plays frames
	// faster than real time, so the wall clock span is at most that).
	done := waitFor[ResponseDone](t, m.k, nil)
	require.LessOrEqual(t, tr.End.Sub(tr.Start), time.Duration(done.Response.Output[0].Content[0].AudioMS)*time.Millisecond)
}

// TestShortTurnBeforeTheReplyWaitsForIt: a short sound starts a turn
// while the agent is silent, the agent's reply starts before the turn
// ends, and the turn's words come once the agent talks. Too short for a
// barge-in, the turn does not cancel the reply (babble at a call's start
// did, in 5 of 40 scorecard trials): the reply plays to its end, then the
// turn is answered.
func TestShortTurnBeforeTheReplyWaitsForIt(t *testing.T) {
	checkGoroutines(t)
	agent := loadWAV(t, "agent16k.wav")
	lm := &fakeLLM{scripts: [][]llm.Chunk{say("Let me tell you all about it."), say("Okay.")}}
	m := newSim(t, Config{OutputRate: media.Rate16k, TurnDetection: serverVAD(), DSP: dspAEC()},
		Deps{LLM: lm, STT: &fakeSTT{answers: []string{"uh-huh"}}, TTS: &fakeTTS{pcm: agent}})
	m.echoFrames, m.echoGain = 5, 0.316
	m.ticks(50)
	m.speak(loadWAV(t, "uhhuh16k.wav"))
	started := waitFor[SpeechStarted](t, m.k, nil)
	require.False(t, started.Interrupt, "the agent was silent")
	require.NoError(t, m.s.CreateResponse("", ResponseOptions{}))
	m.untilAudio(200)
	done := m.untilDone(1000)
	require.Equal(t, ResponseCompleted, done.Response.Status, "the reply played to its end")
	require.Equal(t, int64(m.frames)*20, done.Response.Output[0].Content[0].AudioMS)
	tr := waitFor[Transcription](t, m.k, nil)
	require.Equal(t, "uh-huh", tr.Transcript)
	// Then the turn is answered.
	second := waitFor[ResponseCreated](t, m.k, func(r ResponseCreated) bool { return r.Response.ID != done.Response.ID })
	require.NotEmpty(t, second.Response.ID)
}
