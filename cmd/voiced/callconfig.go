package main

import (
	"flag"
	"strings"

	"github.com/voiced/voiced/call"
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
