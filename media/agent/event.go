package agent

import "time"

// Event is something a session reports to its transport through Sink: the
// realtime API's server events in neutral form, plus the call-log records
// (Turn, ToolCalled, ToolResult) and the end of the call (Ended). Audio
// itself is not an event: transports pull it with ReadFrame.
type Event interface{ event() }

// SpeechStarted reports the caller started a turn
// (input_audio_buffer.speech_started). Interrupt means it interrupted the
// agent, whose audio stopped at once.
type SpeechStarted struct {
	ItemID       string
	AudioStartMS int64
	Interrupt    bool
}

// PlayoutPaused reports that the agent's audio paused at the caller's
// speech onset, AudioMS into the item, while the engine decides whether
// it is an interruption (voiced-specific; realtime clients that ask for
// it get output_audio_buffer.paused). A SpeechStarted with Interrupt, or
// a PlayoutResumed, follows.
type PlayoutPaused struct {
	ResponseID, ItemID string
	AudioMS            int64
}

// PlayoutResumed reports that a paused agent carries on from AudioMS: the
// caller's sound was no interruption (a backchannel, a cough, a noise).
type PlayoutResumed struct {
	ResponseID, ItemID string
	AudioMS            int64
}

// SpeechStopped reports the caller's turn ended (speech_stopped).
type SpeechStopped struct {
	ItemID     string
	AudioEndMS int64
}

// InputCommitted reports the input audio buffer became item ItemID
// (input_audio_buffer.committed). EventID is the client event that asked
// for it, if any.
type InputCommitted struct {
	EventID        string
	ItemID         string
	PreviousItemID string
}

// InputCleared reports the input audio buffer was emptied
// (input_audio_buffer.cleared).
type InputCleared struct{ EventID string }

// InputTimeout reports the caller stayed silent for the idle timeout
// (input_audio_buffer.timeout_triggered).
type InputTimeout struct {
	ItemID                   string
	AudioStartMS, AudioEndMS int64
}

// ItemAdded reports an item joined the conversation after PreviousItemID
// (conversation.item.created; GA: .added then .done).
type ItemAdded struct {
	EventID        string
	Item           Item
	PreviousItemID string
}

// ItemDeleted reports a deleted item (conversation.item.deleted).
type ItemDeleted struct {
	EventID string
	ItemID  string
}

// ItemTruncated reports an assistant audio item cut to AudioEndMS
// (conversation.item.truncated).
type ItemTruncated struct {
	EventID      string
	ItemID       string
	ContentIndex int
	AudioEndMS   int64
}

// ItemRetrieved answers a retrieve (conversation.item.retrieved).
type ItemRetrieved struct {
	EventID string
	Item    Item
}

// Transcription reports the words of a caller's audio item
// (conversation.item.input_audio_transcription.completed, or .failed when
// Failed is set).
type Transcription struct {
	ItemID       string
	ContentIndex int
	Transcript   string
	Failed       bool
	Err          string
}

// TranscriptionDelta reports words of a caller's audio item as they are
// recognized (conversation.item.input_audio_transcription.delta): appended
// text, sent before the item's Transcription. A streaming STT's partial
// hypotheses arrive while the caller speaks (ItemID is then the one
// SpeechStarted announced); a provider that streams its answer sends them
// after the commit. Deltas concatenate to the final transcript, except
// when the recognizer revised a word already sent: then no more deltas
// come for the item, and its Transcription is the authority.
type TranscriptionDelta struct {
	ItemID       string
	ContentIndex int
	Delta        string
}

// ResponseCreated reports a response started (response.created).
type ResponseCreated struct{ Response Response }

// OutputItemAdded reports a response's new item (response.output_item.added).
type OutputItemAdded struct {
	ResponseID  string
	OutputIndex int
	Item        Item
}

// OutputItemDone reports a response's finished item
// (response.output_item.done).
type OutputItemDone struct {
	ResponseID  string
	OutputIndex int
	Item        Item
}

// ContentPartAdded reports a new content part (response.content_part.added).
type ContentPartAdded struct {
	ResponseID, ItemID        string
	OutputIndex, ContentIndex int
	Part                      Content
}

// ContentPartDone reports a finished content part (response.content_part.done).
type ContentPartDone struct {
	ResponseID, ItemID        string
	OutputIndex, ContentIndex int
	Part                      Content
}

// TextDelta is more of a response's text: its audio transcript
// (response.output_audio_transcript.delta) when Audio, else its text
// (response.output_text.delta).
type TextDelta struct {
	ResponseID, ItemID        string
	OutputIndex, ContentIndex int
	Audio                     bool
	Delta                     string
}

// TextDone is a part's whole text or transcript (….done).
type TextDone struct {
	ResponseID, ItemID        string
	OutputIndex, ContentIndex int
	Audio                     bool
	Text                      string
}

// AudioDone reports the end of a part's audio (response.output_audio.done).
type AudioDone struct {
	ResponseID, ItemID        string
	OutputIndex, ContentIndex int
}

// ArgumentsDelta is more of a function call's arguments
// (response.function_call_arguments.delta).
type ArgumentsDelta struct {
	ResponseID, ItemID, CallID string
	OutputIndex                int
	Delta                      string
}

// ArgumentsDone is a function call's whole arguments
// (response.function_call_arguments.done).
type ArgumentsDone struct {
	ResponseID, ItemID, CallID string
	OutputIndex                int
	Name, Arguments            string
}

// ResponseDone reports a finished response with its status (response.done).
type ResponseDone struct{ Response Response }

// Error reports a client request the session refused (error). EventID is
// the client event at fault; Code and Param follow the realtime API
// (invalid_request_error codes such as item_not_found).
type Error struct {
	EventID, Code, Message, Param string
}

// Turn is one turn of the call's transcript: what the caller said, or what
// the agent actually played (Interrupted: it was cut off).
type Turn struct {
	ItemID      string
	Role        string
	Text        string
	Start, End  time.Time
	Interrupted bool
}

// ToolCalled records a function call the model made.
type ToolCalled struct {
	CallID, Name, Arguments string
	At                      time.Time
}

// ToolResult records a function call's output.
type ToolResult struct {
	CallID, Name, Output string
	IsError              bool
	At                   time.Time
}

// DTMF records a key press recognised in the caller's audio
// (Config.InbandDTMF): Digit is one of 0-9, *, #, A-D; Seq numbers the
// session's presses from 1; At is when it was recognised (its tone
// having sounded for 40 ms or so).
type DTMF struct {
	Digit rune
	Seq   int
	At    time.Time
}

// Ended reports the session ended the call itself: Reason is agent_end
// (end_call), timeout (MaxDuration) or silence (check-ins unanswered).
// Nothing follows it.
type Ended struct{ Reason string }

func (SpeechStarted) event()      {}
func (PlayoutPaused) event()      {}
func (PlayoutResumed) event()     {}
func (SpeechStopped) event()      {}
func (InputCommitted) event()     {}
func (InputCleared) event()       {}
func (InputTimeout) event()       {}
func (ItemAdded) event()          {}
func (ItemDeleted) event()        {}
func (ItemTruncated) event()      {}
func (ItemRetrieved) event()      {}
func (Transcription) event()      {}
func (TranscriptionDelta) event() {}
func (ResponseCreated) event()    {}
func (OutputItemAdded) event()    {}
func (OutputItemDone) event()     {}
func (ContentPartAdded) event()   {}
func (ContentPartDone) event()    {}
func (TextDelta) event()          {}
func (TextDone) event()           {}
func (AudioDone) event()          {}
func (ArgumentsDelta) event()     {}
func (ArgumentsDone) event()      {}
func (ResponseDone) event()       {}
func (Error) event()              {}
func (Turn) event()               {}
func (ToolCalled) event()         {}
func (ToolResult) event()         {}
func (DTMF) event()               {}
func (Ended) event()              {}
