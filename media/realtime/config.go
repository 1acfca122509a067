package realtime

import (
	"context"
	"encoding/json"
	"time"

	"github.com/voiced/voiced/media/agent"
	"github.com/voiced/voiced/media/pace"
)

// Config tunes the realtime server. Zero values mean defaults.
type Config struct {
	// MaxMessageBytes is the largest client message accepted; a larger one
	// closes the socket with 1009. Default 8 MiB (about 2.5 minutes of
	// base64 PCM at 24 kHz in one append).
	MaxMessageBytes int
	// PingInterval is how often the server pings; a client silent for
	// twice as long (no data, no pong) is closed. Default 15 s.
	PingInterval time.Duration
	// IdleTimeout closes a socket whose client sent no message (pongs
	// aside) for this long. Default 10 minutes.
	IdleTimeout time.Duration
	// StartTimeout closes an inline socket that sends no session.update
	// for this long. Default 60 s.
	StartTimeout time.Duration
	// WriteTimeout bounds one write to the client; a client that does not
	// read for this long is closed. Default 10 s.
	WriteTimeout time.Duration
	// MaxQueuedBytes bounds what may wait for a slow client; beyond it the
	// socket is closed with 1008 "slow consumer". Default 4 MiB.
	MaxQueuedBytes int
	// MaxPending bounds the client events buffered before an inline call
	// is live. Default 1000.
	MaxPending int
	// OrgSessions caps concurrent sockets per organization (0: no cap).
	OrgSessions int
	// SlotTTL is the lease of a session slot, renewed while the socket
	// lives. Default 2 minutes.
	SlotTTL time.Duration
	// Loopback makes every session play the caller's turns back (no STT,
	// model or TTS), for load tests of the media path.
	Loopback bool
	// BlobDir is where recordings go (recordings/<org>/<call>.wav); empty
	// records nothing.
	BlobDir string
	// Model is passed to the LLM as the model (empty: the provider's own).
	Model string
	// EchoDelay is the echo canceller's delay hint for sessions that
	// cancel echo. Default 120 ms.
	EchoDelay time.Duration
	// DeltaFrames is how many 20 ms frames of agent audio one audio delta
	// (or binary message) carries once a response is playing: the frames
	// still leave in real time, but the socket is written (and the client
	// woken) once per delta rather than once per frame. The cost is that
	// much delay less one frame before a response's first audio; a delta
	// is cut short when the audio stops or an event must follow it (a
	// barge-in), so truncation stays exact. Default 1 (20 ms deltas).
	DeltaFrames int
}

func (c Config) withDefaults() Config {
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = 8 << 20
	}
	def(&c.PingInterval, 15*time.Second)
	def(&c.IdleTimeout, 10*time.Minute)
	def(&c.StartTimeout, time.Minute)
	def(&c.WriteTimeout, 10*time.Second)
	def(&c.SlotTTL, 2*time.Minute)
	def(&c.EchoDelay, 120*time.Millisecond)
	if c.MaxQueuedBytes == 0 {
		c.MaxQueuedBytes = 4 << 20
	}
	if c.MaxPending == 0 {
		c.MaxPending = 1000
	}
	c.DeltaFrames = min(max(c.DeltaFrames, 1), 50)
	return c
}

// Tool is a function tool of an agent.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// Agent is the configuration a call runs with: a saved agent's, or an
// inline session's after validation (control fills the defaults).
type Agent struct {
	// Prompt, Voice and Tools start a saved agent's session settings,
	// with EndpointingMS (the silence that ends a caller turn, 0: the
	// default) and Interruptible (the caller may barge in) for its turn
	// detection.
	Prompt, Voice string
	Tools         []Tool
	EndpointingMS int
	Interruptible bool
	// Engine is the engine configuration of the agent (package call's one
	// mapping of it, the same on every channel): the session's settings
	// (instructions, voice, tools, turn detection, sampling, the audio
	// formats, and an inline session's noise reduction) go over it.
	Engine agent.Config
}

// Admission is an admitted web call.
type Admission struct {
	CallID, OrgID, AgentID int64
	Agent                  Agent
	// Inline is set for calls configured by the client rather than a
	// saved agent: no automatic behaviours (spec 4.14).
	Inline bool
	// MaxDuration is what the balance pays for (0: no limit).
	MaxDuration time.Duration
	Start       time.Time
}

// CallEnd is how a call ended (calllog.CallEnd's subset).
type CallEnd struct {
	Status             string // completed or failed
	Reason             string
	Detail             string
	At                 time.Time
	RecordingKey       string
	RecordingStartedAt time.Time
}

// Authenticator checks a socket's credential.
type Authenticator interface {
	// Authenticate resolves a secret API key to its organization, or
	// returns ErrUnauthorized.
	Authenticate(ctx context.Context, key string) (orgID int64, err error)
	// Claim redeems a session token from POST /v1/realtime/sessions (once,
	// before it expires) and returns the call it admitted, or
	// ErrUnauthorized.
	Claim(ctx context.Context, token string) (Admission, error)
}

// CallLog admits and records calls. Refusals are ErrUnknownAgent,
// ErrInsufficientBalance or a *ConfigError.
type CallLog interface {
	AdmitAgent(ctx context.Context, orgID, agentID int64) (Admission, error)
	// AdmitInline validates an inline configuration (the spec's inline
	// config object with prompt) and admits a call with it.
	AdmitInline(ctx context.Context, orgID int64, config json.RawMessage) (Admission, error)
	// Record adds one engine event of the call (a transcript turn, a tool
	// call or result) to its history; id is unique within the call.
	Record(ctx context.Context, callID int64, id string, e agent.Event) error
	Finish(ctx context.Context, callID int64, end CallEnd) error
}

// Slots bounds concurrent sessions per key (a coord.Semaphore); Acquire
// returns ErrSessionLimit when every slot is taken.
type Slots interface {
	Acquire(ctx context.Context, key string, size int, ttl time.Duration) (token string, err error)
	Release(ctx context.Context, key, token string) error
	ExtendLease(ctx context.Context, key, token string, ttl time.Duration) error
}

// Pacer is the node's send clock (*pace.Pacer).
type Pacer interface {
	Register(s pace.Stream) (pace.Handle, error)
	Unregister(h pace.Handle)
}

// Deps are the server's collaborators. Auth, Calls and Pacer are
// required; LLM, STT and TTS unless Config.Loopback; Slots only with
// Config.OrgSessions; Tools is optional (saved agents' tools then go to
// the client too).
type Deps struct {
	Auth  Authenticator
	Calls CallLog
	Slots Slots
	Pacer Pacer
	LLM   agent.LLM
	STT   agent.STT
	TTS   agent.TTS
	// Tools returns the tool runner of a saved agent's call.
	Tools func(Admission) agent.ToolRunner
	// Recorders writes the sessions' recordings (agent.Deps.Recorders);
	// nil: each session has its own writer.
	Recorders *agent.Recorders
	// Started, when set, gets each call's engine session once it is
	// live (whisper reaches it there); CallLog.Finish ends it.
	Started func(callID int64, s *agent.Session)
}
