package webrtc

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/stretchr/testify/require"
)

// testConfig is a loopback server with short ICE timers.
func testConfig() Config {
	return Config{UDPAddr: "127.0.0.1:0", IncludeLoopback: true, DisconnectedTimeout: 400 * time.Millisecond,
		FailedTimeout: 600 * time.Millisecond, ConnectTimeout: 5 * time.Second}
}

func newTestServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg, nil, nil)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// call connects a test client to s and runs an Echo behind the session.
func call(t *testing.T, s *Server, o clientOptions, opts SessionOptions) (*testClient, *Session, chan error) {
	t.Helper()
	c, offer := newTestClient(t, o)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sess, answer, err := s.Answer(ctx, offer, opts)
	require.NoError(t, err)
	require.Contains(t, answer, "a=candidate")
	require.Contains(t, answer, "a=fingerprint:sha-256")
	c.answer(answer)
	echo, err := NewEcho(sess.InputRate())
	require.NoError(t, err)
	ran := make(chan error, 1)
	go func() { ran <- sess.Run(echo) }()
	return c, sess, ran
}

func waitEnd(t *testing.T, sess *Session, d time.Duration) (string, Stats) {
	t.Helper()
	select {
	case <-sess.Done():
	case <-time.After(d):
		t.Fatalf("session did not end within %v", d)
	}
	return sess.End()
}

func TestCallCarriesAudioBothWays(t *testing.T) {
	defer leakCheck(t)()
	s := newTestServer(t, testConfig())
	c, sess, ran := call(t, s, clientOptions{}, SessionOptions{CallID: 1})
	c.waitConnected(5 * time.Second)
	require.Eventually(t, sess.Connected, 5*time.Second, 10*time.Millisecond)

	// The client's tone turns reach the engine as voiced frames, and the
	// echo of each turn comes back as voiced audio.
	require.Eventually(t, func() bool { return c.voicedIn.Load() >= 20 }, 8*time.Second, 20*time.Millisecond,
		"echoed audio: %d packets, %d voiced", c.packetsIn.Load(), c.voicedIn.Load())
	// Audio round trip: the echo starts 400 ms (the Echo's hangover) after
	// the turn's last frame; the rest is the path there and back (jitter
	// buffer, Opus, the send queue, the network).
	rt := time.Duration(c.firstVoiced.Load()-c.toneEnd.Load()) - echoHangover*20*time.Millisecond
	t.Logf("audio round trip beyond the echo's hangover: %v", rt)
	require.Greater(t, rt, time.Duration(0))
	require.Less(t, rt, 300*time.Millisecond)
	st := sess.Stats()
	require.GreaterOrEqual(t, st.FramesVoiced, uint64(20))
	require.Greater(t, st.MeanSquare, 0.0)
	require.InDelta(t, 8000/1.414, st.PeakRMS, 1500, "a -12 dBFS sine's RMS")
	q := st.Quality
	require.Greater(t, q.PacketsSent, uint64(0))
	require.Greater(t, q.PacketsReceived, uint64(30))
	require.Equal(t, q.PacketsExpected, q.PacketsReceived, "no loss on loopback")
	require.Zero(t, q.PacketsLost)
	require.Equal(t, "opus", q.Codec)
	require.Greater(t, q.MOS, 4.0)
	require.Less(t, q.JitterMs, 20.0)
	require.Greater(t, st.SetupTime, time.Duration(0))
	require.Less(t, st.SetupTime, 3*time.Second)
	t.Logf("setup %v, in %d packets (%d voiced frames), out %d packets, %d DTX frames, jitter %.2f ms, MOS %.2f, playout %+v",
		st.SetupTime, q.PacketsReceived, st.FramesVoiced, q.PacketsSent, st.DTXFrames, q.JitterMs, q.MOS, st.Playout)

	// The client's RTCP receiver reports about the echo arrive (pion sends
	// them every second): loss, jitter and a loopback round trip.
	require.Eventually(t, func() bool { return sess.Stats().RemoteReports > 0 }, 5*time.Second, 50*time.Millisecond)
	q = sess.Stats().Quality
	require.Zero(t, q.RemoteLossPercent)
	require.Less(t, q.RTTMs, 50.0)
	require.Less(t, q.RemoteJitterMs, 20.0)

	// Data channel: the server's message reaches the page.
	require.NoError(t, sess.Send([]byte(`{"type":"transcript","role":"user","text":"hi"}`)))
	select {
	case m := <-c.messages:
		require.Contains(t, m, "transcript")
	case <-time.After(5 * time.Second):
		t.Fatal("no data channel message")
	}

	// The page closes: the session ends as a caller hang-up, promptly.
	start := time.Now()
	c.close()
	reason, final := waitEnd(t, sess, 5*time.Second)
	require.Equal(t, "caller_hangup", reason)
	require.Less(t, time.Since(start), 3*time.Second)
	require.NoError(t, <-ran)
	require.Equal(t, final.Quality.PacketsReceived, sess.Stats().Quality.PacketsReceived, "stats are final once ended")
	require.ErrorIs(t, sess.WriteFrame(make([]int16, 320)), ErrClosed)
	require.ErrorIs(t, sess.ReadFrame(make([]int16, 320)), ErrClosed)
	require.ErrorIs(t, sess.Send([]byte("{}")), ErrClosed)
	require.Equal(t, 0, s.Sessions())
	require.NoError(t, s.Close())
}

func TestHangupMessage(t *testing.T) {
	defer leakCheck(t)()
	s := newTestServer(t, testConfig())
	c, sess, ran := call(t, s, clientOptions{silent: true}, SessionOptions{})
	c.waitConnected(5 * time.Second)
	require.Eventually(t, func() bool { return c.dc.ReadyState() == 2 }, 5*time.Second, 10*time.Millisecond) // open
	require.NoError(t, c.dc.SendText(`{"type":"hangup"}`))
	reason, _ := waitEnd(t, sess, 5*time.Second)
	require.Equal(t, "caller_hangup", reason)
	require.NoError(t, <-ran)
	c.close()
	require.NoError(t, s.Close())
}

func TestICEFailureEndsSession(t *testing.T) {
	defer leakCheck(t)()
	s := newTestServer(t, testConfig())
	c, sess, ran := call(t, s, clientOptions{silent: true}, SessionOptions{})
	c.waitConnected(5 * time.Second)
	require.Eventually(t, sess.Connected, 5*time.Second, 10*time.Millisecond)
	// The client vanishes without a word (network gone, laptop lid shut):
	// its socket closes, so consent checks go unanswered.
	require.NoError(t, c.mux.Close())
	reason, _ := waitEnd(t, sess, 10*time.Second)
	require.Equal(t, "ice_failed", reason)
	require.NoError(t, <-ran)
	c.close()
	require.NoError(t, s.Close())
}

func TestConnectTimeoutAndMaxDuration(t *testing.T) {
	defer leakCheck(t)()
	cfg := testConfig()
	cfg.ConnectTimeout = 300 * time.Millisecond
	s := newTestServer(t, cfg)

	// An answer the browser never applies.
	c, offer := newTestClient(t, clientOptions{silent: true})
	sess, _, err := s.Answer(context.Background(), offer, SessionOptions{})
	require.NoError(t, err)
	reason, st := waitEnd(t, sess, 5*time.Second)
	require.Equal(t, "connect_timeout", reason)
	require.Zero(t, st.SetupTime)
	c.close()

	// A call that reaches its funded duration.
	c2, sess2, ran := call(t, s, clientOptions{silent: true}, SessionOptions{MaxDuration: 400 * time.Millisecond})
	c2.waitConnected(5 * time.Second)
	reason, _ = waitEnd(t, sess2, 5*time.Second)
	require.Equal(t, "timeout", reason)
	require.NoError(t, <-ran)
	c2.close()
	require.NoError(t, s.Close())
}

func TestAnswerRefusals(t *testing.T) {
	defer leakCheck(t)()
	cfg := testConfig()
	cfg.MaxSessions = 1
	s := newTestServer(t, cfg)
	ctx := context.Background()

	_, _, err := s.Answer(ctx, "not sdp at all", SessionOptions{})
	require.ErrorIs(t, err, ErrBadOffer)
	c, offer := newTestClient(t, clientOptions{silent: true})
	_, _, err = s.Answer(ctx, strings.ReplaceAll(strings.ReplaceAll(offer, "opus/48000", "PCMU/8000"), "OPUS/48000", "PCMU/8000"), SessionOptions{})
	require.ErrorIs(t, err, ErrBadOffer)
	_, _, err = s.Answer(ctx, "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 opus/48000/2\r\n", SessionOptions{})
	require.ErrorIs(t, err, ErrBadOffer, "no ICE credentials or fingerprint")
	require.Equal(t, 0, s.Sessions())

	sess, _, err := s.Answer(ctx, offer, SessionOptions{})
	require.NoError(t, err)
	require.ErrorIs(t, s.Check(), ErrCapacity)
	c2, offer2 := newTestClient(t, clientOptions{silent: true})
	_, _, err = s.Answer(ctx, offer2, SessionOptions{})
	require.ErrorIs(t, err, ErrCapacity)
	sess.Close("test")
	require.NoError(t, s.Check())
	require.ErrorIs(t, sess.WriteFrame(make([]int16, 100)), ErrFrameSize)
	c.close()
	c2.close()
	require.NoError(t, s.Close())
	require.ErrorIs(t, s.Check(), ErrClosed)
	_, _, err = s.Answer(ctx, offer, SessionOptions{})
	require.True(t, errors.Is(err, ErrClosed))
}

func TestPublicIPReplacesHostCandidates(t *testing.T) {
	defer leakCheck(t)()
	cfg := testConfig()
	cfg.PublicIPs = []string{"203.0.113.7"}
	s := newTestServer(t, cfg)
	c, offer := newTestClient(t, clientOptions{silent: true})
	sess, answer, err := s.Answer(context.Background(), offer, SessionOptions{})
	require.NoError(t, err)
	require.Contains(t, answer, " 203.0.113.7 ")
	require.NotContains(t, answer, " 127.0.0.1 ", "the private address is not announced")
	sess.Close("test")
	c.close()
	require.NoError(t, s.Close())
}

func TestConfigValidation(t *testing.T) {
	for _, cfg := range []Config{
		{UDPAddr: "nope:nope"},
		{PublicIPs: []string{"not-an-ip"}},
		{ICEServers: []ICEServer{{}}},
		{ICEServers: []ICEServer{{URLs: []string{"http://x"}}}},
		{RelayOnly: true},
		{InputRate: 44100},
		{Bitrate: 1},
		{SendQueue: 100},
		{MaxSessions: -1},
		{FECLossPercent: 101},
		{TURNSecret: "s"}, // no TURN server to use it with
		{TURNSecret: "s", ICEServers: []ICEServer{{URLs: []string{"stun:x:3478"}}}},
		{TURNSecret: "s", ICEServers: []ICEServer{{URLs: []string{"turn:x:3478"}, Username: "u", Credential: "p"}}}, // both modes
		{TURNSecret: "s", ICEServers: []ICEServer{{URLs: []string{"turn:x:3478"}}}, TURNCredentialTTL: time.Second},
	} {
		_, err := New(cfg, nil, nil)
		require.ErrorIs(t, err, ErrBadConfig, "%+v", cfg)
	}
	// STUN servers carry no credentials to browsers; static TURN ones are
	// handed out as they are, with no expiry.
	s := newTestServer(t, Config{UDPAddr: "127.0.0.1:0", ICEServers: []ICEServer{{URLs: []string{"stun:x:3478"}, Username: "u", Credential: "p"},
		{URLs: []string{"turn:x:3478"}, Username: "u", Credential: "p"}}})
	servers, exp := s.BrowserICEServers("k")
	require.Equal(t, []ICEServer{{URLs: []string{"stun:x:3478"}}, {URLs: []string{"turn:x:3478"}, Username: "u", Credential: "p"}}, servers)
	require.True(t, exp.IsZero())
}

// TestOpusModes: the node's stream starts CELT-only (TOC configs 16-31)
// and turns to SILK with in-band FEC (configs 0-11) once the browser's
// RTCP reports loss at FECLossPercent, with the audio going on; the
// answer asks the browser for wideband at most (maxplaybackrate).
func TestOpusModes(t *testing.T) {
	defer leakCheck(t)()
	s := newTestServer(t, testConfig())
	c, sess, ran := call(t, s, clientOptions{}, SessionOptions{})
	require.Contains(t, sess.pc.LocalDescription().SDP, "opus/48000")
	c.waitConnected(5 * time.Second)
	require.Eventually(t, func() bool { return c.voicedIn.Load() >= 10 }, 10*time.Second, 20*time.Millisecond)
	require.GreaterOrEqual(t, c.lastTOC.Load()>>3, uint32(16), "CELT while there is no loss")
	require.False(t, sess.Stats().FEC)

	sess.receptionReport(rtcp.ReceptionReport{FractionLost: 5}, time.Now()) // 2%: below the default 3%
	v := c.voicedIn.Load()
	require.Eventually(t, func() bool { return c.voicedIn.Load() >= v+10 }, 10*time.Second, 20*time.Millisecond)
	require.False(t, sess.Stats().FEC)
	require.GreaterOrEqual(t, c.lastTOC.Load()>>3, uint32(16))

	sess.receptionReport(rtcp.ReceptionReport{FractionLost: 26}, time.Now()) // 10%
	require.Eventually(t, func() bool { return sess.Stats().FEC }, 10*time.Second, 20*time.Millisecond)
	v = c.voicedIn.Load()
	require.Eventually(t, func() bool { return c.voicedIn.Load() >= v+10 && c.lastTOC.Load()>>3 < 12 }, 10*time.Second, 20*time.Millisecond,
		"SILK after the loss report, audio still flowing: toc config %d", c.lastTOC.Load()>>3)
	c.close()
	waitEnd(t, sess, 5*time.Second)
	require.NoError(t, <-ran)
	require.NoError(t, s.Close())
}

func TestAnswerAsksForWideband(t *testing.T) {
	const offerish = "v=0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 opus/48000/2\r\na=fmtp:111 maxplaybackrate=48000;stereo=1;useinbandfec=1\r\n"
	require.Equal(t, "v=0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 opus/48000/2\r\na=fmtp:111 stereo=1;useinbandfec=1;maxplaybackrate=16000\r\n",
		withPlaybackRate(offerish, 16000))
	bare := "v=0\r\na=rtpmap:109 opus/48000/2\r\na=rtpmap:0 PCMU/8000\r\n"
	require.Equal(t, "v=0\r\na=rtpmap:109 opus/48000/2\r\na=fmtp:109 maxplaybackrate=8000\r\na=rtpmap:0 PCMU/8000\r\n", withPlaybackRate(bare, 8000))
	require.Equal(t, offerish, withPlaybackRate(offerish, 48000), "full band needs no limit")

	s := newTestServer(t, testConfig())
	c, offer := newTestClient(t, clientOptions{silent: true})
	defer c.close()
	sess, answer, err := s.Answer(context.Background(), offer, SessionOptions{})
	require.NoError(t, err)
	defer sess.Close("test")
	require.Regexp(t, `a=fmtp:111 [^\r]*maxplaybackrate=16000`, answer)
	c.answer(answer) // pion takes it
}
