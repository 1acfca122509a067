package sip_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/media"
	"github.com/voiced/voiced/sip"
	"github.com/voiced/voiced/sip/siptest"
)

// heard returns the level (dBFS) and the tone frequency (from zero
// crossings) of what baresip received, skipping the first half second.
func heard(t *testing.T, b *siptest.Baresip) (level, freq float64) {
	t.Helper()
	rate, mono, err := b.Received()
	require.NoError(t, err)
	skip := rate / 2
	require.Greater(t, len(mono), skip+rate/2, "at least a second received")
	mono = mono[skip:]
	crossings := 0
	for i := 1; i < len(mono); i++ {
		if (mono[i-1] < 0) != (mono[i] < 0) {
			crossings++
		}
	}
	seconds := float64(len(mono)) / float64(rate)
	return media.DBFS(mono), float64(crossings) / 2 / seconds
}

// TestBaresipCallsUs: baresip dials an agent number; we answer over UDP
// and echo its 440 Hz tone, which it hears back at a speech-like level.
func TestBaresipCallsUs(t *testing.T) {
	siptest.CheckLeaks(t)
	e := newEnv(t, sip.Config{}, nil)
	b := siptest.StartBaresip(t, siptest.BaresipOptions{Codecs: "PCMU/8000/1", Quit: 3 * time.Second,
		Commands: []string{"/dial sip:" + agentNumber + "@127.0.0.1:" + strconv.Itoa(int(e.udp.Port()))}})
	out, err := b.Wait()
	require.NoError(t, err, out)
	require.Contains(t, out, "Call established")
	end := e.log.Wait(t, 1, 5*time.Second)
	require.Equal(t, sip.StatusCompleted, end.Status)
	require.Equal(t, sip.ReasonCallerHangup, end.Reason)
	s := e.media.Session(1)
	require.Greater(t, s.Echoed(), int64(100), "about 3 s of 20 ms packets")
	level, freq := heard(t, b)
	t.Logf("baresip heard %.1f dBFS at %.0f Hz", level, freq)
	require.Greater(t, level, -40.0, "not silence")
	require.InDelta(t, 440, freq, 20)
}

// TestBaresipAnswersUs: we dial baresip (auto-answer) as a trunk; media
// flows both ways until we hang up.
func TestBaresipAnswersUs(t *testing.T) {
	siptest.CheckLeaks(t)
	e := newEnv(t, sip.Config{}, nil)
	b := siptest.StartBaresip(t, siptest.BaresipOptions{Codecs: "PCMA/8000/1", Quit: 5 * time.Second})
	time.Sleep(500 * time.Millisecond) // baresip binds its port
	tr := sip.Trunk{Host: "127.0.0.1", Port: b.Port}
	require.NoError(t, e.srv.Dial(context.Background(), sip.OutboundCall{CallID: 900, From: agentNumber, To: "alice", Trunk: tr}))
	var s *siptest.EchoSession
	require.Eventually(t, func() bool {
		s = e.media.Session(900)
		return s != nil && s.Echoed() > 100
	}, 5*time.Second, 10*time.Millisecond, "baresip answered and its tone comes back: %s", b.Output())
	require.Equal(t, "PCMA", s.Updates()[0].Codec.Name)
	s.Call.Hangup("")
	end := e.log.Wait(t, 900, 5*time.Second)
	require.Equal(t, sip.StatusCompleted, end.Status)
	require.Equal(t, sip.ReasonAgentEnd, end.Reason)
	require.Eventually(t, func() bool { return strings.Contains(b.Output(), "terminated") }, 3*time.Second, 10*time.Millisecond, b.Output())
	level, freq := heard(t, b)
	t.Logf("baresip heard %.1f dBFS at %.0f Hz", level, freq)
	require.Greater(t, level, -40.0)
}
