package sip_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/sip"
	"github.com/voiced/voiced/sip/siptest"
)

// answerPort opens echo sessions that note when sip.Answerer is called.
type answerPort struct {
	echo siptest.EchoPort

	mu       sync.Mutex
	answered []answerNote
}

type answerNote struct {
	// at is when Answered was called, reported the time it was given.
	at, reported time.Time
	updates      int
}

type answerMedia struct {
	*siptest.EchoSession
	p *answerPort
}

func (p *answerPort) Open(ctx context.Context, c *sip.Call) (sip.Media, error) {
	m, err := p.echo.Open(ctx, c)
	if err != nil {
		return nil, err
	}
	return answerMedia{m.(*siptest.EchoSession), p}, nil
}

func (m answerMedia) Answered(at time.Time) {
	m.p.mu.Lock()
	defer m.p.mu.Unlock()
	m.p.answered = append(m.p.answered, answerNote{time.Now(), at, len(m.Updates())})
}

// TestSippAnswered: an outbound call's media hears Answered once, at the
// 200 OK (media already applied), not at the 183 with early media that
// comes half a second before it.
func TestSippAnswered(t *testing.T) {
	siptest.CheckLeaks(t)
	port := &answerPort{}
	log := siptest.NewLog()
	srv, err := sip.New(sip.Config{}, testLogger(t), sip.Deps{Admitter: siptest.AdmitFunc(nil), Media: port, Calls: log})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	_, err = srv.ListenUDP("127.0.0.1:0")
	require.NoError(t, err)
	p := siptest.Sipp(t, "testdata/sipp/uas_early.xml", 10*time.Second, "-m", "1")
	time.Sleep(200 * time.Millisecond)
	require.NoError(t, srv.Dial(context.Background(), sip.OutboundCall{CallID: 900, From: agentNumber, To: "+14155550123", Trunk: trunkAt(t, p.Addr())}))
	var s *siptest.EchoSession
	require.Eventually(t, func() bool {
		s = port.echo.Session(900)
		return s != nil && len(s.Updates()) > 0
	}, 3*time.Second, 5*time.Millisecond, "early media")
	early := time.Now()
	require.Eventually(t, func() bool {
		port.mu.Lock()
		defer port.mu.Unlock()
		return len(port.answered) > 0
	}, 3*time.Second, 5*time.Millisecond, "answered")
	s.Call.Hangup("")
	require.NoError(t, p.Wait())
	port.mu.Lock()
	defer port.mu.Unlock()
	require.Len(t, port.answered, 1)
	require.Greater(t, port.answered[0].at.Sub(early), 300*time.Millisecond, "not at the 183")
	require.GreaterOrEqual(t, port.answered[0].updates, 2, "the answer's SDP is applied first")
	// The time it is told is the call's answer, as its end says.
	end := log.Wait(t, 900, 5*time.Second)
	require.False(t, end.Answered.IsZero())
	require.Equal(t, end.Answered, port.answered[0].reported, "Answered(at) is End.Answered")
}
