package agent

import (
	"fmt"
	"time"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/media"
	"github.com/voiced/voiced/media/dsp"
	"github.com/voiced/voiced/media/turn"
)

// DefaultInstructions is the system prompt of a session configured
// without one (spec 4.14: "a short generic assistant line").
const DefaultInstructions = "You are a helpful, concise voice assistant. Keep answers short and speak naturally."

// DefaultCheckin is what the agent says when the caller has been silent for
// the check-in interval.
const DefaultCheckin = "Are you still there?"

// EndCallTool is the name of the built-in tool that ends the call.
const EndCallTool = "end_call"

// Tool is a function the model may call (llm.Tool, named here so that
// transports configure tools without importing ai).
type Tool = llm.Tool

// TurnDetection configures automatic turn-taking; a nil *TurnDetection in
// Config means manual turns (the client commits the input buffer).
type TurnDetection struct {
	// Turn configures the detector.
	Turn turn.Config
	// CreateResponse answers each finished caller turn (create_response).
	CreateResponse bool
	// InterruptResponse lets caller speech cut the agent off
	// (interrupt_response).
	InterruptResponse bool
}

// Config is one session's behaviour. Zero values mean defaults where a
// field says so.
type Config struct {
	// Instructions is the system prompt; empty means DefaultInstructions.
	Instructions string
	// Voice and Language go to the TTS (and Language to the STT).
	Voice, Language string
	// Model overrides the LLM provider's model; empty keeps its default.
	Model string
	// Temperature and MaxTokens tune the LLM (nil / 0: its defaults).
	Temperature *float64
	MaxTokens   int
	// Tools are the function tools the model may call. Without a
	// ToolRunner they are delivered to the client (function_call items)
	// and the session waits for its function_call_output.
	Tools []Tool
	// EndCall offers the model the built-in end_call tool, which ends the
	// call once the agent has finished speaking.
	EndCall bool
	// Placeholders are short phrases, one of which is spoken when the
	// first sentence of an answer is not ready after PlaceholderDelay.
	Placeholders []string
	// PlaceholderDelay is how long a slow answer may keep the caller
	// waiting before a placeholder. Zero means 1.5 s.
	PlaceholderDelay time.Duration
	// SpeakFirst makes the agent open the call: with FirstMessage if set,
	// else with an answer to the instructions alone. A loopback session
	// ignores it: it has nothing to say until the caller speaks.
	SpeakFirst   bool
	FirstMessage string
	// CheckinInterval enables silence check-ins: after this long without
	// a sound from either side the agent says CheckinMessage (default
	// DefaultCheckin), at most MaxCheckins times in a row, and then ends
	// the call (reason silence). It needs caller audio to flow.
	CheckinInterval time.Duration
	MaxCheckins     int
	CheckinMessage  string
	// MaxDuration ends the call (reason timeout) when it runs out. Zero
	// means no limit.
	MaxDuration time.Duration
	// Loopback plays each caller turn back instead of answering it: no
	// STT, LLM or TTS run (load tests of the media path). Whatever would
	// need a provider (a model's answer, check-ins, Say) gets an Error
	// event (provider_unavailable, say_unavailable) instead.
	Loopback bool
	// OutputRate is the rate of the audio ReadFrame returns (and the TTS
	// produces). Zero means 24000.
	OutputRate int
	// InputRate is the rate of the caller frames WriteFrame takes: 16000
	// (zero) or 8000. At 8000 (a G.711 transport, whose audio needs no
	// resampler then) the agent listens at 8 kHz: noise reduction, echo
	// cancellation, speech detection and the input buffer run at that
	// rate, and each finished turn is brought up to 16 kHz for the STT.
	InputRate int
	// TurnDetection enables automatic turns; nil means manual.
	TurnDetection *TurnDetection
	// DSP configures noise reduction and echo cancellation of the caller's
	// audio (SampleRate is ignored: it is InputRate).
	DSP dsp.Config
	// InbandDTMF listens for key presses carried as tones in the caller's
	// audio (media/dtmf), for transports with no out-of-band digits (the
	// realtime WebSocket, a browser's microphone): each press is a DTMF
	// event, and while a key's tone sounds the caller is not speaking
	// (it neither starts a turn nor barges in).
	InbandDTMF bool
	// KeepInterruptedOnSilence is false by default: when an interrupting
	// turn holds no words (a false interruption), the agent resumes where
	// it stopped. Set it to cancel the answer anyway.
	KeepInterruptedOnSilence bool
	// RecordPath, when set, records the call as a stereo WAV file there
	// (caller left, agent right), at OutputRate or 16 kHz, whichever is
	// lower, finished by Close.
	RecordPath string
	// Now is the clock of transcript times; nil means time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.Instructions == "" {
		c.Instructions = DefaultInstructions
	}
	if c.PlaceholderDelay == 0 {
		c.PlaceholderDelay = 1500 * time.Millisecond
	}
	if c.CheckinMessage == "" {
		c.CheckinMessage = DefaultCheckin
	}
	if c.OutputRate == 0 {
		c.OutputRate = media.Rate24k
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.InputRate == 0 {
		c.InputRate = media.Rate16k
	}
	c.DSP.SampleRate = c.InputRate
	return c
}

func (c Config) validate() error {
	if err := media.ValidateRate(c.OutputRate); err != nil {
		return fmt.Errorf("agent: output rate: %w", err)
	}
	switch {
	case c.InputRate != media.Rate8k && c.InputRate != media.Rate16k:
		return fmt.Errorf("agent: input rate %d Hz (8000 or 16000): %w", c.InputRate, ErrConfig)
	case c.PlaceholderDelay < 0:
		return fmt.Errorf("agent: placeholder delay %v: %w", c.PlaceholderDelay, ErrConfig)
	case c.CheckinInterval < 0 || c.MaxCheckins < 0:
		return fmt.Errorf("agent: check-ins %v x %d: %w", c.CheckinInterval, c.MaxCheckins, ErrConfig)
	case c.MaxDuration < 0:
		return fmt.Errorf("agent: max duration %v: %w", c.MaxDuration, ErrConfig)
	}
	return nil
}

// Deps are a session's providers. LLM, STT and TTS are required unless
// Config.Loopback; Tools is optional.
type Deps struct {
	LLM   LLM
	STT   STT
	TTS   TTS
	Tools ToolRunner
	// Recorders writes the session's recording (Config.RecordPath), with
	// the other sessions' of the node; the session does not close it.
	// nil: the session makes Recorders of its own, one writer, and closes
	// them at Close.
	Recorders *Recorders
}
