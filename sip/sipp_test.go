package sip_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/sip"
	"github.com/voiced/voiced/sip/siptest"
)

// TestSippInboundCall: sipp calls an agent number over UDP, sends RTP
// from a pcap to the address of our answer, and hangs up.
func TestSippInboundCall(t *testing.T) {
	siptest.CheckLeaks(t)
	for _, tr := range []string{"u1", "t1"} {
		t.Run(tr, func(t *testing.T) {
			e := newEnv(t, sip.Config{}, nil)
			target := e.udp.String()
			if tr == "t1" {
				target = e.tcp.String()
			}
			p := siptest.Sipp(t, "testdata/sipp/uac_call.xml", 15*time.Second, "-t", tr, "-s", agentNumber, "-m", "1", target)
			require.NoError(t, p.Wait())
			end := e.log.Wait(t, 1, 5*time.Second)
			require.Equal(t, sip.StatusCompleted, end.Status)
			require.Equal(t, sip.ReasonCallerHangup, end.Reason)
			require.False(t, end.Answered.IsZero())
			s := e.media.Session(1)
			require.NotNil(t, s)
			require.True(t, s.Closed(), "media closed with the call")
			ups := s.Updates()
			require.Len(t, ups, 1)
			require.Equal(t, "PCMA", ups[0].Codec.Name)
			require.Equal(t, uint8(101), ups[0].DTMF.PT)
			require.Equal(t, uint16(p.MediaPort), ups[0].Remote.Port())
			require.True(t, ups[0].Sends())
			require.Greater(t, s.Received(), int64(10), "RTP from sipp reached the address in our SDP")
			require.Equal(t, s.Received(), s.Echoed())
			require.Len(t, e.log.Ends(1), 1, "one Finish per call")
		})
	}
}
