package main

import (
	"context"
	"errors"
	"flag"
	"strings"
	"time"

	"github.com/voiced/voiced/call"
	"github.com/voiced/voiced/media/realtime"
	"github.com/voiced/voiced/storage/coord"
)

// callConfig is the live call's configuration from the flags; fs tells
// which addresses were given explicitly (those must be usable).
func (c *config) callConfig(blobDir string, fs *flag.FlagSet) call.Config {
	cc := call.Config{BlobDir: blobDir, Model: c.LLMModel, Loopback: c.CallLoopback,
		Phone: call.PhoneConfig{Addr: c.SIPAddr, AddrRequired: flagGiven(fs, "sip-addr"), Advertise: c.SIPAdvertise, Register: c.SIPRegister,
			Trusted: c.sipTrusted, RTPLow: c.rtpLow, RTPHigh: c.rtpHigh, RTPReceive: c.RTPReceive, RTPSendPhases: int(c.RTPSendPhases),
			NoPrefetch: !c.RTPPrefetch},
		Browser: call.BrowserConfig{UDPAddr: c.WebRTCUDPAddr, AddrRequired: flagGiven(fs, "webrtc-udp-addr"), PublicIPs: commaList(c.WebRTCPublicIP),
			TURN: commaList(c.WebRTCTURN), TURNUser: c.WebRTCTURNUser, TURNPassword: c.WebRTCTURNPw, TURNSecret: c.WebRTCTURNSecret,
			TURNTTL: c.webrtcTURNTTL, MaxSessions: int(c.WebRTCMaxSessions)},
		Realtime: call.RealtimeConfig{OrgSessions: int(c.RealtimeOrgSessions), Loopback: c.RealtimeLoopback, DeltaFrames: int(c.RealtimeDeltaMs / 20)},
	}
	if c.tlsCert != nil {
		cc.Phone.TLS = *c.tlsCert
	}
	return cc
}

// providersConfig names the AI providers of the node's calls.
func (c *config) providersConfig() call.ProvidersConfig {
	return call.ProvidersConfig{LLMBaseURL: c.LLMBaseURL, LLMAPIKey: c.LLMAPIKey, LLMModel: c.LLMModel,
		TTSBaseURL: c.TTSBaseURL, TTSAPIKey: c.TTSAPIKey, TTSModel: c.TTSModel,
		STTBaseURL: c.STTBaseURL, STTAPIKey: c.STTAPIKey, STTModel: c.STTModel}
}

// commaList splits a comma-separated flag, dropping empty items.
func commaList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// flagGiven reports whether flag name was set on the command line or
// through its environment twin.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// slotsOf is the coordinator's semaphore as realtime session slots, nil
// when it has none (no per-organization cap).
func slotsOf(c coordinator) realtime.Slots {
	if sem, ok := c.(coord.Semaphore); ok {
		return rtSlots{sem}
	}
	return nil
}

// rtSlots adapts a coord.Semaphore.
type rtSlots struct{ sem coord.Semaphore }

func (s rtSlots) Acquire(ctx context.Context, key string, size int, ttl time.Duration) (string, error) {
	tok, err := s.sem.Acquire(ctx, key, size, ttl)
	if errors.Is(err, coord.ErrFull) {
		return "", realtime.ErrSessionLimit
	}
	return tok, err
}

func (s rtSlots) Release(ctx context.Context, key, token string) error {
	return s.sem.Release(ctx, key, token)
}

func (s rtSlots) ExtendLease(ctx context.Context, key, token string, ttl time.Duration) error {
	return s.sem.ExtendLease(ctx, key, token, ttl)
}
