package main

import (
	"flag"
	"strings"

	"github.com/voiced/voiced/call"
)

// callConfig is the live call's configuration from the flags; fs tells
// which addresses were given explicitly (those must be usable).
func (c *config) callConfig(blobDir string, fs *flag.FlagSet) call.Config {
	cc := c.call
	cc.BlobDir, cc.Model = blobDir, c.prov.LLMModel
	cc.Phone.AddrRequired, cc.Phone.NoPrefetch = flagGiven(fs, "sip-addr"), !c.RTPPrefetch
	cc.Browser.AddrRequired = flagGiven(fs, "webrtc-udp-addr")
	cc.Browser.PublicIPs, cc.Browser.TURN = commaList(c.WebRTCPublicIP), commaList(c.WebRTCTURN)
	cc.Realtime.DeltaFrames = int(c.RealtimeDeltaMs / 20)
	return cc
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
