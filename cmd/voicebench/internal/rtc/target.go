// Package rtc is voicebench's WebRTC client: a pion PeerConnection per
// call, like a browser on the widget or the mic-session page. It offers
// Opus audio and an "events" data channel, gets the node's answer through
// a Signaller (by default voiced's mic sessions: POST /v1/mic-session with
// an API key and agent id, then POST the offer to the returned
// server_url), and is a load.Target whose sessions carry their own media
// (load.MediaSession): the generator's pacer hands each session one 20 ms
// pre-encoded Opus frame per tick, which a writer goroutine sends on the
// track; a reader goroutine receives the agent's RTP and measures it like
// the SIP path does (RFC 3550 loss and jitter, onset delay on probed
// calls).
package rtc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/interceptor"
	"github.com/pion/webrtc/v4"

	"github.com/voiced/voiced/cmd/voicebench/internal/audio"
)

// Signaller trades an SDP offer (ICE gathering complete) for the node's
// answer.
type Signaller interface {
	Exchange(ctx context.Context, offer string) (answer string, err error)
}

// MicSession signals through voiced's mic sessions (docs/decisions.md,
// "Browser calls"): each call is a test call of AgentID, admitted and
// billed like any call.
type MicSession struct {
	// Base is the API root, e.g. http://127.0.0.1:8080.
	Base    string
	APIKey  string
	AgentID int64
	Client  *http.Client
}

// Exchange implements Signaller.
func (m *MicSession) Exchange(ctx context.Context, offer string) (string, error) {
	var ms struct {
		Token     string `json:"token"`
		ServerURL string `json:"server_url"`
	}
	if err := m.post(ctx, strings.TrimSuffix(m.Base, "/")+"/v1/mic-session", true, map[string]any{"agent_id": m.AgentID}, &ms); err != nil {
		return "", err
	}
	var ans struct {
		SDP string `json:"sdp"`
	}
	if err := m.post(ctx, ms.ServerURL, false, map[string]any{"token": ms.Token, "sdp": offer}, &ans); err != nil {
		return "", err
	}
	if ans.SDP == "" {
		return "", fmt.Errorf("%w: answer without sdp", ErrSignal)
	}
	return ans.SDP, nil
}

func (m *MicSession) post(ctx context.Context, url string, auth bool, body, out any) error {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSignal, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if auth {
		req.Header.Set("Authorization", "Bearer "+m.APIKey)
	}
	c := m.Client
	if c == nil {
		c = http.DefaultClient
	}
	res, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSignal, err)
	}
	defer res.Body.Close()
	rb, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%w: POST %s: %d %s", ErrSignal, url, res.StatusCode, strings.TrimSpace(string(rb)))
	}
	if err := json.Unmarshal(rb, out); err != nil {
		return fmt.Errorf("%w: POST %s: %v", ErrSignal, url, err)
	}
	return nil
}

// Config describes the calls.
type Config struct {
	Signal Signaller
	Source *audio.Source
	// Probe is how many calls decode the agent's audio to recover delay;
	// 0 means 16, -1 none.
	Probe int
}

// Target dials WebRTC calls.
type Target struct {
	cfg      Config
	api      *webrtc.API
	frames   [][]byte
	onsetAt  int
	onsetOff time.Duration
	probed   atomic.Int64
}

// NewTarget prepares the pion API (Opus only, IPv4 UDP host candidates
// including loopback, no mDNS, RTCP reports as browsers send) and the
// Opus frames every call sends.
func NewTarget(cfg Config) (*Target, error) {
	if cfg.Signal == nil || cfg.Source == nil {
		return nil, fmt.Errorf("%w: a signaller and a source are required", ErrConfig)
	}
	if cfg.Probe == 0 {
		cfg.Probe = 16
	}
	frames, err := cfg.Source.Frames("opus")
	if err != nil {
		return nil, err
	}
	m := &webrtc.MediaEngine{}
	if err := m.RegisterCodec(webrtc.RTPCodecParameters{RTPCodecCapability: opusCap, PayloadType: 111}, webrtc.RTPCodecTypeAudio); err != nil {
		return nil, err
	}
	ir := &interceptor.Registry{}
	if err := webrtc.ConfigureRTCPReports(ir); err != nil {
		return nil, err
	}
	se := webrtc.SettingEngine{}
	se.SetIncludeLoopbackCandidate(true)
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	f, k := cfg.Source.Onset(48000)
	return &Target{cfg: cfg, api: webrtc.NewAPI(webrtc.WithMediaEngine(m), webrtc.WithSettingEngine(se), webrtc.WithInterceptorRegistry(ir)),
		frames: frames, onsetAt: f, onsetOff: time.Duration(k) * time.Second / 48000}, nil
}

var opusCap = webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2, SDPFmtpLine: "minptime=10;useinbandfec=1"}
