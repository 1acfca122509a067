package sip_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
			p := siptest.Sipp(t, "testdata/sipp/uac_call.xml", 15*time.Second, "-d", "1000", "-t", tr, "-s", agentNumber, "-m", "1", target)
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
			// Every packet is echoed, but one read as the call's end
			// closed the socket under its echo.
			require.LessOrEqual(t, s.LostToClose(), int64(1))
			require.Equal(t, s.Received(), s.Echoed()+s.LostToClose())
			require.Len(t, e.log.Ends(1), 1, "one Finish per call")
		})
	}
}

// scenario renders a templated scenario of testdata/sipp into a
// temporary file.
func scenario(t *testing.T, name string, data any) string {
	return siptest.Scenario(t, "testdata/sipp/"+name+".tmpl", data)
}

// TestSippRefusals: unknown numbers get 404, numbers without an agent or
// without balance 480, offers without a codec we speak 488, each with a
// Reason header; none reaches media.
func TestSippRefusals(t *testing.T) {
	siptest.CheckLeaks(t)
	e := newEnv(t, sip.Config{}, nil)
	for _, tc := range []struct {
		name, number string
		code         int
		fmt, rtpmap  string
	}{
		{"unknown number", "+14155550000", 404, "0", "PCMU/8000"},
		{"no agent", noAgentNumber, 480, "0", "PCMU/8000"},
		{"no balance", brokeNumber, 480, "8", "PCMA/8000"},
		{"unsupported codec", agentNumber, 488, "18", "G729/8000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := scenario(t, "uac_refused.xml", map[string]any{"Code": tc.code, "Fmt": tc.fmt, "Map": tc.rtpmap})
			p := siptest.Sipp(t, path, 10*time.Second, "-s", tc.number, "-m", "1", e.udp.String())
			require.NoError(t, p.Wait())
		})
	}
	require.Empty(t, e.media.Sessions(), "refused calls open no media")
	require.Zero(t, e.srv.ActiveCalls())
}

func TestSippOptions(t *testing.T) {
	siptest.CheckLeaks(t)
	e := newEnv(t, sip.Config{}, nil)
	for _, tr := range []struct{ flag, addr string }{{"u1", e.udp.String()}, {"t1", e.tcp.String()}} {
		p := siptest.Sipp(t, "testdata/sipp/uac_options.xml", 10*time.Second, "-t", tr.flag, "-m", "1", tr.addr)
		require.NoError(t, p.Wait(), tr.flag)
	}
}

// TestSippCancel: the caller cancels while we ring; the INVITE gets 487,
// the admitted call ends failed with caller_hangup, media is closed.
func TestSippCancel(t *testing.T) {
	siptest.CheckLeaks(t)
	e := newEnv(t, sip.Config{AnswerDelay: 3 * time.Second}, nil)
	p := siptest.Sipp(t, "testdata/sipp/uac_cancel.xml", 10*time.Second, "-s", agentNumber, "-m", "1", e.udp.String())
	require.NoError(t, p.Wait())
	end := e.log.Wait(t, 1, 5*time.Second)
	require.Equal(t, sip.StatusFailed, end.Status)
	require.Equal(t, sip.ReasonCallerHangup, end.Reason)
	require.Equal(t, 487, end.Code)
	require.True(t, end.Answered.IsZero())
	s := e.media.Session(1)
	require.NotNil(t, s)
	require.True(t, s.Closed())
	require.Empty(t, s.Updates(), "media never started")
}

// TestSippHold: a re-INVITE with a=sendonly puts us on hold (answer
// a=recvonly, media told to stop sending), another with a=sendrecv
// resumes.
func TestSippHold(t *testing.T) {
	siptest.CheckLeaks(t)
	e := newEnv(t, sip.Config{}, nil)
	p := siptest.Sipp(t, "testdata/sipp/uac_hold.xml", 10*time.Second, "-s", agentNumber, "-m", "1", e.udp.String())
	require.NoError(t, p.Wait())
	end := e.log.Wait(t, 1, 5*time.Second)
	require.Equal(t, sip.StatusCompleted, end.Status)
	ups := e.media.Session(1).Updates()
	require.Len(t, ups, 3)
	require.True(t, ups[0].Sends() && ups[0].Receives())
	require.False(t, ups[1].Sends(), "held: we stop sending")
	require.True(t, ups[1].Receives())
	require.True(t, ups[2].Sends() && ups[2].Receives())
	require.Equal(t, "PCMU", ups[2].Codec.Name)
}

// TestSippInfoDTMF: digits sent by SIP INFO reach the media session in
// order.
func TestSippInfoDTMF(t *testing.T) {
	siptest.CheckLeaks(t)
	e := newEnv(t, sip.Config{}, nil)
	p := siptest.Sipp(t, "testdata/sipp/uac_info.xml", 10*time.Second, "-s", agentNumber, "-m", "1", e.udp.String())
	require.NoError(t, p.Wait())
	e.log.Wait(t, 1, 5*time.Second)
	require.Equal(t, "12#", e.media.Session(1).Digits())
}

// TestSippRefer: Transfer sends REFER, follows the NOTIFYs to 200 and
// hangs up; the call ends ai_transfer.
func TestSippRefer(t *testing.T) {
	siptest.CheckLeaks(t)
	e := newEnv(t, sip.Config{}, nil)
	p := siptest.Sipp(t, "testdata/sipp/uac_refer.xml", 10*time.Second, "-s", agentNumber, "-m", "1", e.udp.String())
	s := e.startedSession(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.Call.Transfer(ctx, "+14155550123"))
	require.NoError(t, p.Wait())
	end := e.log.Wait(t, 1, 5*time.Second)
	require.Equal(t, sip.StatusCompleted, end.Status)
	require.Equal(t, sip.ReasonTransfer, end.Reason)
}

// TestSippReferBeforeAnswer: a transfer asked for while the call still
// rings (a speak-first agent runs its tools from the media session's
// start, before the 200 OK) waits for the answer and then REFERs, instead
// of failing as a transfer of an unanswered call.
func TestSippReferBeforeAnswer(t *testing.T) {
	siptest.CheckLeaks(t)
	e := newEnv(t, sip.Config{AnswerDelay: 300 * time.Millisecond}, nil)
	p := siptest.Sipp(t, "testdata/sipp/uac_refer.xml", 10*time.Second, "-s", agentNumber, "-m", "1", e.udp.String())
	var s *siptest.EchoSession
	require.Eventually(t, func() bool { s = e.media.Session(1); return s != nil }, 5*time.Second, time.Millisecond)
	require.Empty(t, s.Updates(), "the call still rings")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.Call.Transfer(ctx, "+14155550123"))
	require.NoError(t, p.Wait())
	end := e.log.Wait(t, 1, 5*time.Second)
	require.Equal(t, sip.ReasonTransfer, end.Reason)
	require.False(t, end.Answered.IsZero())
}

// TestSippSessionTimers: RFC 4028 with a 2 s interval: too small an
// interval gets 422; as refresher we send UPDATEs; as the refreshed side
// we hang up when the refreshes stop.
func TestSippSessionTimers(t *testing.T) {
	siptest.CheckLeaks(t)
	e := newEnv(t, sip.Config{MinSE: 2 * time.Second, SessionExpires: 2 * time.Second}, nil)
	t.Run("refresher", func(t *testing.T) {
		p := siptest.Sipp(t, "testdata/sipp/uac_timer_refresh.xml", 10*time.Second, "-s", agentNumber, "-m", "1", e.udp.String())
		require.NoError(t, p.Wait())
	})
	t.Run("expiry", func(t *testing.T) {
		start := time.Now()
		p := siptest.Sipp(t, "testdata/sipp/uac_timer_expire.xml", 10*time.Second, "-s", agentNumber, "-m", "1", e.udp.String())
		require.NoError(t, p.Wait())
		end := e.log.Wait(t, 2, 5*time.Second)
		require.Equal(t, sip.ReasonSessionExpired, end.Reason)
		require.Less(t, time.Since(start), 5*time.Second)
	})
	t.Run("too small", func(t *testing.T) {
		e := newEnv(t, sip.Config{}, nil)
		p := siptest.Sipp(t, "testdata/sipp/uac_timer_small.xml", 10*time.Second, "-s", agentNumber, "-m", "1", e.udp.String())
		require.NoError(t, p.Wait())
	})
}

// TestSippLoad: sipp places 100 calls at 50 calls/s, each with a second
// of RTP; every call must succeed. It logs the INVITE to 200 OK times.
func TestSippLoad(t *testing.T) {
	siptest.CheckLeaks(t)
	e := newEnv(t, sip.Config{}, nil)
	const calls = 100
	start := time.Now()
	p := siptest.Sipp(t, "testdata/sipp/uac_call.xml", 30*time.Second, "-d", "1000", "-s", agentNumber, "-m", strconv.Itoa(calls), "-r", "50", "-l", "200",
		"-trace_rtt", "-rtt_freq", "1", e.udp.String())
	require.NoError(t, p.Wait())
	elapsed := time.Since(start)
	require.Eventually(t, func() bool { return e.srv.ActiveCalls() == 0 }, 5*time.Second, 10*time.Millisecond)
	for id := int64(1); id <= calls; id++ {
		end := e.log.Wait(t, id, time.Second)
		require.Equal(t, sip.StatusCompleted, end.Status, "call %d", id)
		require.Len(t, e.log.Ends(id), 1)
	}
	rtts := readRTT(t, p.Dir())
	require.Len(t, rtts, calls)
	slices.Sort(rtts)
	t.Logf("%d calls in %v; INVITE to 200 OK: p50 %.2f ms, p99 %.2f ms, max %.2f ms", calls, elapsed.Round(time.Millisecond),
		rtts[len(rtts)/2], rtts[len(rtts)*99/100], rtts[len(rtts)-1])
	require.Less(t, rtts[len(rtts)*99/100], 250.0, "p99 INVITE to 200 OK")
}

// readRTT reads sipp's -trace_rtt file: "date_ms;response_time_ms;rtd".
func readRTT(t *testing.T, dir string) []float64 {
	files, err := filepath.Glob(filepath.Join(dir, "*_rtt.csv"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	b, err := os.ReadFile(files[0])
	require.NoError(t, err)
	var out []float64
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Split(line, ";")
		if len(f) < 2 {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		require.NoError(t, err, line)
		out = append(out, v)
	}
	return out
}
