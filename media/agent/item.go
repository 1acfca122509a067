package agent

import (
	"slices"
	"strconv"
)

// Item types, after the realtime API's conversation items.
const (
	ItemMessage            = "message"
	ItemFunctionCall       = "function_call"
	ItemFunctionCallOutput = "function_call_output"
)

// Roles of message items.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleSystem    = "system"
)

// Item statuses.
const (
	StatusCompleted  = "completed"
	StatusIncomplete = "incomplete"
	StatusInProgress = "in_progress"
)

// ContentType is the kind of a content part, named neutrally; transports
// spell it in their protocol's dialect (input_text, output_audio, audio...).
type ContentType uint8

const (
	// InputText is text the client wrote (user or system messages).
	InputText ContentType = iota
	// InputAudio is caller speech; Transcript holds its words.
	InputAudio
	// OutputText is text the agent wrote without speaking it.
	OutputText
	// OutputAudio is agent speech; Transcript holds what it said.
	OutputAudio
)

// Content is one part of a message item.
type Content struct {
	Type ContentType
	// Text is the text of InputText and OutputText parts.
	Text string
	// Transcript is the words of InputAudio and OutputAudio parts; for an
	// interrupted answer, the part actually played.
	Transcript string
	// Transcribed is set once an InputAudio part's transcription finished
	// (until then Transcript is unknown, not empty).
	Transcribed bool
	// AudioMS is the length of the part's audio in milliseconds.
	AudioMS int64
}

// Item is one entry of the conversation. Sessions hand out copies; the
// session's own items are never shared.
type Item struct {
	ID     string
	Type   string
	Role   string
	Status string
	// Content is the parts of a message item.
	Content []Content
	// CallID, Name and Arguments describe a function_call item; CallID and
	// Output a function_call_output.
	CallID    string
	Name      string
	Arguments string
	Output    string
}

// clone returns a deep copy of it.
func (it *Item) clone() Item {
	c := *it
	c.Content = slices.Clone(it.Content)
	return c
}

// text returns the words of a message item: its texts and transcripts.
func (it *Item) text() string {
	var out string
	for _, c := range it.Content {
		s := c.Text
		if c.Type == InputAudio || c.Type == OutputAudio {
			s = c.Transcript
		}
		if s == "" {
			continue
		}
		if out != "" {
			out += " "
		}
		out += s
	}
	return out
}

// Response statuses and reasons, as in the realtime API's response.done.
const (
	ResponseInProgress = "in_progress"
	ResponseCompleted  = "completed"
	ResponseCancelled  = "cancelled"
	ResponseIncomplete = "incomplete"
	ResponseFailed     = "failed"

	ReasonTurnDetected    = "turn_detected"
	ReasonClientCancelled = "client_cancelled"
	ReasonMaxTokens       = "max_output_tokens"
	ReasonContentFilter   = "content_filter"
)

// Usage counts a response's tokens, when the model reports them.
type Usage struct {
	InputTokens, OutputTokens, TotalTokens int
}

// Response is one answer of the agent: the items it produced and how it
// ended. Sessions hand out copies.
type Response struct {
	ID     string
	Status string
	// Reason details a cancelled, incomplete or failed status.
	Reason string
	// Error explains a failed response (for status_details.error).
	Error string
	// Output lists the response's items.
	Output []Item
	// Audio says the response speaks (else it only writes text).
	Audio bool
	// Conversation is false for out-of-band responses, whose items are not
	// added to the conversation.
	Conversation bool
	Metadata     map[string]string
	Usage        Usage
}

// ids makes the session's identifiers: a prefix, the session tag and a
// counter, unique within the process for the session's life.
type ids struct {
	tag string
	n   uint64
}

func (g *ids) next(prefix string) string {
	g.n++
	return prefix + g.tag + strconv.FormatUint(g.n, 36)
}
