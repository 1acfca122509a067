package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/media/mediatest"
)

// coturnWithSecret runs Debian's coturn on a free loopback port with the
// TURN REST API's shared secret (use-auth-secret), relaying to loopback
// peers, and returns its turn: URL.
func coturnWithSecret(t *testing.T, secret string) string {
	return mediatest.Coturn(t, 49410, 49600, "--use-auth-secret", "--static-auth-secret="+secret)
}

// TestBrowserWidgetThroughTURN: with --webrtc-turn and --webrtc-turn-secret
// the widget fetches the node's TURN server with time-limited credentials
// and, told to relay only (data-ice-transport-policy="relay"), Chromium's
// call connects through coturn: its selected candidate pair is a relay
// candidate, which coturn grants only for valid credentials.
func TestBrowserWidgetThroughTURN(t *testing.T) {
	chromiumPath(t)
	wavPath := speechWAV(t)
	turn := coturnWithSecret(t, "widget-secret")
	base, key := liveServe(t, "--webrtc-turn", turn, "--webrtc-turn-secret", "widget-secret", "--webrtc-turn-ttl", "10m")

	var ag map[string]any
	require.Equal(t, 201, apiCall(t, base, key, "POST", "/v1/agents", map[string]any{"name": "Relay"}, &ag))
	var pk map[string]any
	require.Equal(t, 201, apiCall(t, base, key, "POST", "/v1/publishable-key", map[string]any{"agent_id": ag["id"], "allowed_domains": []string{"shop.example"}}, &pk))
	ch := startChromium(t, wavPath)
	widgetCall(t, ch, base, pk["key"].(string), `data-ice-transport-policy="relay"`)

	// What the page is handed: the node's TURN URL with REST credentials.
	var ice struct {
		Servers []struct {
			URLs               []string
			Username, Password string
		}
	}
	ch.eval(`fetch(`+fmt.Sprintf("%q", base+"/v1/widget/ice-servers?publishable_key="+pk["key"].(string))+`).then(r => r.json()).then(b => ({servers: b.ice_servers.map(s => ({urls: s.urls, username: s.username, password: s.credential}))}))`, &ice)
	require.Len(t, ice.Servers, 1)
	require.Equal(t, []string{turn}, ice.Servers[0].URLs)
	require.Regexp(t, `^[0-9]+:`+pk["key_prefix"].(string)+`$`, ice.Servers[0].Username)
	require.NotEmpty(t, ice.Servers[0].Password)

	var local string
	require.Eventually(t, func() bool {
		ch.eval(`(async () => {
			const st = await voicedWidget.pc.getStats();
			let pair = null;
			st.forEach((x) => { if (x.type === "candidate-pair" && x.nominated && x.state === "succeeded") pair = x; });
			return pair ? st.get(pair.localCandidateId).candidateType : "";
		})()`, &local)
		return local != ""
	}, 10*time.Second, 100*time.Millisecond)
	require.Equal(t, "relay", local, "the page's media goes through coturn")
	var st rtcStats
	require.Eventually(t, func() bool {
		ch.eval(pageStats+`(voicedWidget.pc)`, &st)
		return st.BytesSent > 5000
	}, 10*time.Second, 100*time.Millisecond, "the microphone's audio leaves through the relay")
	ch.eval(`voicedWidget.hangup(); true`, nil)
}
