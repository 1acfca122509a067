package agent

import "github.com/voiced/voiced/ai/llm"

// WhisperPrefix opens each whisper's system message, so the model tells
// guidance from its instructions and does not read it out.
const WhisperPrefix = "Private guidance from a supervisor listening to this call. Follow it from now on; never say it aloud or mention it: "

// Whisper gives the agent private guidance (POST /v1/calls/{id}/whisper):
// from the next answer on, every request to the model carries it as a
// system message after the conversation. It is never spoken and never an
// item of the conversation, so no transcript shows it. It returns
// ErrClosed once the session is closed.
func (s *Session) Whisper(text string) error {
	return s.do(func() { s.whispers = append(s.whispers, text) })
}

// withWhispers appends the whispers to msgs; loop goroutine.
func (s *Session) withWhispers(msgs []llm.Message) []llm.Message {
	for _, w := range s.whispers {
		msgs = append(msgs, llm.Message{Role: llm.RoleSystem, Content: WhisperPrefix + w})
	}
	return msgs
}
