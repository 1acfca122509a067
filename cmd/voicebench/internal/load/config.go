package load

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/voiced/voiced/cmd/voicebench/internal/audio"
	"github.com/voiced/voiced/cmd/voicebench/internal/sdp"
)

// Topology says how the media a call gets back relates to what it sent,
// so the onset lag can be read as a delay.
type Topology int

const (
	// Echo targets send our own audio back (sipp -rtp_echo, a UDP echo):
	// the lag is a round trip, the one-way delay half of it.
	Echo Topology = iota
	// Relay targets forward our audio to a second leg (rtpengine): the
	// lag is the one-way delay.
	Relay
	// Agent targets answer each utterance (voiced's audio-loopback
	// agent): the lag holds the agent's turn-taking, so it is reported as
	// response time (end of our speech to the start of theirs), and the
	// one-way delay is not recoverable.
	Agent
)

// String names the topology as the reports do.
func (t Topology) String() string {
	switch t {
	case Echo:
		return "echo"
	case Relay:
		return "relay"
	case Agent:
		return "agent"
	}
	return fmt.Sprintf("topology(%d)", int(t))
}

// Config describes a load. Zero values mean the defaults noted.
type Config struct {
	// Codec is what calls send.
	Codec sdp.Codec
	// Source is the audio every call sends (required).
	Source *audio.Source
	// Topology interprets delays (see Topology).
	Topology Topology
	// Rate is call attempts per second while ramping; 0 means 20.
	Rate float64
	// Duration ends each call after this long; 0 means calls last until
	// Stop. With Maintain, ended calls are replaced.
	Duration time.Duration
	// Lanes is the number of shared UDP sockets; 0 means 4.
	Lanes int
	// Phases spreads sends over the 20 ms period: call i sends at sub-tick
	// i mod Phases of a pacer running at 20 ms / Phases, as calls with
	// random phases would arrive at a real node. 0 means 10 (2 ms).
	Phases int
	// Probe is how many calls decode their audio to measure delay; 0
	// means every call for G.711 and 16 for Opus (decoding Opus for
	// thousands of calls would load the generator), -1 none.
	Probe int
	// Local is the address the lanes bind; zero means 127.0.0.1.
	Local netip.Addr
	// SetupTimeout bounds one call's Dial; 0 means 10 s.
	SetupTimeout time.Duration
	// HangupTimeout bounds one call's Hangup; 0 means 5 s.
	HangupTimeout time.Duration
	// TargetPIDs are processes whose CPU time windows report (the system
	// under test).
	TargetPIDs []int
	// SocketBuffer is each lane's receive and send buffer in bytes; 0
	// means 8 MiB.
	SocketBuffer int
}

func (c Config) withDefaults() (Config, error) {
	if c.Source == nil {
		return c, fmt.Errorf("%w: no audio source", ErrConfig)
	}
	if c.Codec.Clock == 0 {
		return c, fmt.Errorf("%w: no codec", ErrConfig)
	}
	if c.Rate <= 0 {
		c.Rate = 20
	}
	if c.Lanes <= 0 {
		c.Lanes = 4
	}
	if c.Phases <= 0 {
		c.Phases = 10
	}
	if c.Probe == 0 {
		if c.Codec.Name == sdp.Opus.Name {
			c.Probe = 16
		} else {
			c.Probe = 1 << 30
		}
	}
	if !c.Local.IsValid() {
		c.Local = netip.MustParseAddr("127.0.0.1")
	}
	if c.SetupTimeout <= 0 {
		c.SetupTimeout = 10 * time.Second
	}
	if c.HangupTimeout <= 0 {
		c.HangupTimeout = 5 * time.Second
	}
	if c.SocketBuffer <= 0 {
		c.SocketBuffer = 8 << 20
	}
	if 20*time.Millisecond%time.Duration(c.Phases) != 0 {
		return c, fmt.Errorf("%w: %d phases do not divide 20 ms", ErrConfig, c.Phases)
	}
	return c, nil
}
