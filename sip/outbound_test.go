package sip_test

import (
	"context"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/sip"
	"github.com/voiced/voiced/sip/siptest"
)

func trunkAt(t *testing.T, addr string) sip.Trunk {
	ap := netip.MustParseAddrPort(addr)
	return sip.Trunk{Host: ap.Addr().String(), Port: int(ap.Port()), Transport: "udp"}
}

// TestSippOutboundAuth: our INVITE is challenged with 401 (MD5,
// qop=auth); sipp verifies the credentials of the retry, answers, gets
// RTP at the address of our offer and hangs up.
func TestSippOutboundAuth(t *testing.T) {
	siptest.CheckLeaks(t)
	e := newEnv(t, sip.Config{}, nil)
	p := siptest.Sipp(t, "testdata/sipp/uas_auth.xml", 10*time.Second, "-m", "1")
	tr := trunkAt(t, p.Addr())
	tr.Username, tr.Password = "alice", "secret"
	time.Sleep(200 * time.Millisecond) // sipp binds its port
	start := time.Now()
	require.NoError(t, e.srv.Dial(context.Background(), sip.OutboundCall{CallID: 501, From: agentNumber, To: "+14155550123", Trunk: tr}))
	require.NoError(t, p.Wait())
	end := e.log.Wait(t, 501, 5*time.Second)
	require.Equal(t, sip.StatusCompleted, end.Status)
	require.Equal(t, sip.ReasonCalleeHangup, end.Reason)
	require.Less(t, end.Answered.Sub(start), 2*time.Second)
	s := e.media.Session(501)
	ups := s.Updates()
	require.Len(t, ups, 1)
	require.Equal(t, "PCMU", ups[0].Codec.Name)
	require.Equal(t, uint16(p.MediaPort), ups[0].Remote.Port())
}

// TestSippOutboundFinal: busy, rejected and failed final responses end
// the call failed with the mapped reason; a callee that never answers is
// CANCELled at the ring timeout (no_answer).
func TestSippOutboundFinal(t *testing.T) {
	siptest.CheckLeaks(t)
	e := newEnv(t, sip.Config{RingTimeout: time.Second}, nil)
	for i, tc := range []struct {
		code   int
		phrase string
		reason string
	}{
		{486, "Busy Here", sip.ReasonBusy},
		{603, "Decline", sip.ReasonRejected},
		{500, "Server Internal Error", sip.ReasonFailed},
		{0, "", sip.ReasonNoAnswer},
	} {
		t.Run(strconv.Itoa(tc.code), func(t *testing.T) {
			path := "testdata/sipp/uas_noanswer.xml"
			if tc.code != 0 {
				path = scenario(t, "uas_final.xml", map[string]any{"Code": tc.code, "Phrase": tc.phrase})
			}
			p := siptest.Sipp(t, path, 10*time.Second, "-m", "1")
			time.Sleep(200 * time.Millisecond)
			id := int64(600 + i)
			require.NoError(t, e.srv.Dial(context.Background(), sip.OutboundCall{CallID: id, From: agentNumber, To: "+14155550123", Trunk: trunkAt(t, p.Addr())}))
			require.NoError(t, p.Wait())
			end := e.log.Wait(t, id, 5*time.Second)
			require.Equal(t, sip.StatusFailed, end.Status)
			require.Equal(t, tc.reason, end.Reason)
			if tc.code != 0 {
				require.Equal(t, tc.code, end.Code)
			}
			require.True(t, e.media.Session(id).Closed())
		})
	}
}

// TestSippEarlyMedia: media starts on the 183 with SDP, before the
// answer; Hangup ends the answered call with our BYE.
func TestSippEarlyMedia(t *testing.T) {
	siptest.CheckLeaks(t)
	e := newEnv(t, sip.Config{}, nil)
	p := siptest.Sipp(t, "testdata/sipp/uas_early.xml", 10*time.Second, "-m", "1")
	time.Sleep(200 * time.Millisecond)
	require.NoError(t, e.srv.Dial(context.Background(), sip.OutboundCall{CallID: 700, From: agentNumber, To: "+14155550123", Trunk: trunkAt(t, p.Addr())}))
	var s *siptest.EchoSession
	require.Eventually(t, func() bool {
		s = e.media.Session(700)
		return s != nil && len(s.Updates()) > 0 && s.Received() > 0
	}, 3*time.Second, 5*time.Millisecond, "early media flows")
	// Answered half a second after the 183.
	require.Eventually(t, func() bool { return len(s.Updates()) >= 2 }, 3*time.Second, 5*time.Millisecond)
	s.Call.Hangup("")
	require.NoError(t, p.Wait())
	end := e.log.Wait(t, 700, 5*time.Second)
	require.Equal(t, sip.StatusCompleted, end.Status)
	require.Equal(t, sip.ReasonAgentEnd, end.Reason)
}

func TestSippVerifyTrunk(t *testing.T) {
	siptest.CheckLeaks(t)
	e := newEnv(t, sip.Config{}, nil)
	p := siptest.Sipp(t, "testdata/sipp/uas_options.xml", 10*time.Second, "-m", "1")
	time.Sleep(200 * time.Millisecond)
	res, err := e.srv.VerifyTrunk(context.Background(), trunkAt(t, p.Addr()), agentNumber)
	require.NoError(t, err)
	require.True(t, res.OK, res.Reason)
	require.Equal(t, 200, res.Code)
	require.NoError(t, p.Wait())

	// Nobody at that port any more: a failed check, not an error.
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	res, err = e.srv.VerifyTrunk(ctx, trunkAt(t, "127.0.0.1:"+strconv.Itoa(siptest.FreePort(t, "127.0.0.1"))), agentNumber)
	require.NoError(t, err)
	require.False(t, res.OK)
	require.Contains(t, res.Reason, "did not answer")
}
