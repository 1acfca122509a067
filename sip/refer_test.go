package sip_test

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/sip"
	"github.com/voiced/voiced/sip/siptest"
)

// transferTrunks puts agentNumber on a VoIP connection that accepts
// calls from loopback and dials out to 127.0.0.1:port as alice/secret.
func transferTrunks(port int) trunks {
	return trunks{agentNumber: {Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		Outbound: &sip.Trunk{Host: "127.0.0.1", Port: port, Username: "alice", Password: "secret"}}}
}

// TestSippIncomingRefer: a PBX (sipp) calls in and sends REFER in the
// dialog. We answer 202, NOTIFY 100 Trying, INVITE the target through
// the number's trunk (a second sipp that challenges with 401), NOTIFY
// 200 OK, and BYE the PBX; the conversation (the call's media session)
// now sends to the target's SDP address, and the call ends when the
// target hangs up.
func TestSippIncomingRefer(t *testing.T) {
	siptest.CheckLeaks(t)
	media, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP("127.0.0.1")})
	require.NoError(t, err)
	defer media.Close()
	mport := media.LocalAddr().(*net.UDPAddr).Port
	uas := siptest.Sipp(t, scenario(t, "uas_bridge.xml", map[string]any{"MediaPort": mport, "HoldMS": 1500, "User": `\+14155550123`}), 15*time.Second, "-m", "1")
	e := newEnv(t, sip.Config{}, transferTrunks(uas.Port))
	pbx := siptest.Sipp(t, scenario(t, "uac_refer_in.xml", map[string]any{"ReferTo": "<sip:+14155550123@127.0.0.1>", "Code": 202,
		"Final": "SIP/2.0 200 OK", "ByeExpected": true}), 15*time.Second, "-s", agentNumber, "-m", "1", e.udp.String())
	require.NoError(t, pbx.Wait())
	require.NoError(t, uas.Wait())
	end := e.log.Wait(t, 1, 5*time.Second)
	require.Equal(t, sip.StatusCompleted, end.Status)
	require.Equal(t, sip.ReasonCallerHangup, end.Reason, "the transferred party hung up")
	s := e.media.Session(1)
	ups := s.Updates()
	require.GreaterOrEqual(t, len(ups), 2)
	require.Equal(t, uint16(pbx.MediaPort), ups[0].Remote.Port(), "first the PBX")
	require.Equal(t, uint16(mport), ups[len(ups)-1].Remote.Port(), "then the REFER target")
	require.Equal(t, "PCMU", ups[len(ups)-1].Codec.Name)
	require.Len(t, e.media.Sessions(), 1, "the same media session goes on")
	require.Len(t, e.log.Ends(1), 1, "one call record")
}

// TestSippIncomingReferRefusals: REFERs the node does not follow get
// their final answer and the call goes on: the target's failure comes
// back in the final NOTIFY; no route (no VoIP connection) and hosts
// other than the trunk's get 403, a Refer-To that is not a SIP or tel
// URI 400.
func TestSippIncomingReferRefusals(t *testing.T) {
	siptest.CheckLeaks(t)
	t.Run("target busy", func(t *testing.T) {
		uas := siptest.Sipp(t, scenario(t, "uas_final.xml", map[string]any{"Code": 486, "Phrase": "Busy Here"}), 15*time.Second, "-m", "1")
		e := newEnv(t, sip.Config{}, transferTrunks(uas.Port))
		pbx := siptest.Sipp(t, scenario(t, "uac_refer_in.xml", map[string]any{"ReferTo": "<tel:+14155550123>", "Code": 202,
			"Final": "SIP/2.0 486 Busy Here", "ByeExpected": false}), 15*time.Second, "-s", agentNumber, "-m", "1", e.udp.String())
		require.NoError(t, pbx.Wait())
		require.NoError(t, uas.Wait())
		end := e.log.Wait(t, 1, 5*time.Second)
		require.Equal(t, sip.ReasonCallerHangup, end.Reason)
		ups := e.media.Session(1).Updates()
		require.Equal(t, uint16(pbx.MediaPort), ups[len(ups)-1].Remote.Port(), "the conversation stayed with the PBX")
	})
	for _, tc := range []struct {
		name, referTo string
		code          int
		trunk         bool
	}{
		{"no route", "<sip:+14155550123@127.0.0.1>", 403, false},
		{"foreign host", "<sip:+14155550123@203.0.113.9>", 403, true},
		{"not a SIP URI", "<http://example.com/>", 400, true},
		{"not a number", "<sip:alice@127.0.0.1>", 400, true},
		{"attended", "<sip:+14155550123@127.0.0.1?Replaces=abc%3Bto-tag%3D1%3Bfrom-tag%3D2>", 501, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tr sip.TrunkLookup
			if tc.trunk {
				tr = transferTrunks(9) // never dialled
			}
			e := newEnv(t, sip.Config{}, tr)
			pbx := siptest.Sipp(t, scenario(t, "uac_refer_in.xml", map[string]any{"ReferTo": tc.referTo, "Code": tc.code, "ByeExpected": false}),
				10*time.Second, "-s", agentNumber, "-m", "1", e.udp.String())
			require.NoError(t, pbx.Wait())
			require.Equal(t, sip.ReasonCallerHangup, e.log.Wait(t, 1, 5*time.Second).Reason)
			require.Len(t, e.media.Session(1).Updates(), 1, "media untouched")
		})
	}
}

// TestSippReferRefusedNoBridge: the caller answers our REFER 405; with
// media that cannot bridge the REFER's failure is Transfer's, and the
// call goes on until we hang up.
func TestSippReferRefusedNoBridge(t *testing.T) {
	siptest.CheckLeaks(t)
	e := newEnv(t, sip.Config{}, transferTrunks(9))
	p := siptest.Sipp(t, scenario(t, "uac_refer_refused.xml", map[string]any{"MediaPort": 9, "Code": 405}), 10*time.Second,
		"-s", agentNumber, "-m", "1", e.udp.String())
	s := e.startedSession(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.Call.Transfer(ctx, "+14155550123")
	var re *sip.ResponseError
	require.ErrorAs(t, err, &re)
	require.Equal(t, 405, re.Code)
	require.False(t, s.Call.Bridged())
	require.Empty(t, e.log.Ends(1), "the call goes on")
	s.Call.Hangup("")
	require.NoError(t, p.Wait())
	require.Equal(t, sip.ReasonAgentEnd, e.log.Wait(t, 1, 5*time.Second).Reason)
}
