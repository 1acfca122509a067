package sip_test

import (
	"context"
	"log/slog"
	"net/netip"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/sip"
	"github.com/voiced/voiced/sip/siptest"
)

// Numbers the test admitter knows.
const (
	agentNumber   = "+14155550100" // admitted
	noAgentNumber = "+14155550199" // held, no agent: 480
	brokeNumber   = "+14155550177" // no balance: 480
)

type env struct {
	srv      *sip.Server
	media    *siptest.EchoPort
	log      *siptest.Log
	udp, tcp netip.AddrPort
	nextID   atomic.Int64
	arrivals chan sip.Arrival
}

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("SIP_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// newEnv starts a Server on loopback UDP and TCP with an echo media
// port, a recording call log and an admitter over the numbers above.
func newEnv(t testing.TB, cfg sip.Config, trunks sip.TrunkLookup) *env {
	t.Helper()
	e := &env{media: &siptest.EchoPort{}, log: siptest.NewLog(), arrivals: make(chan sip.Arrival, 1000)}
	adm := siptest.AdmitFunc(func(ctx context.Context, a sip.Arrival) (sip.Admission, error) {
		select {
		case e.arrivals <- a:
		default:
		}
		switch a.To {
		case agentNumber:
			return sip.Admission{CallID: e.nextID.Add(1)}, nil
		case noAgentNumber:
			return sip.Admission{}, sip.ErrNoAgent
		case brokeNumber:
			return sip.Admission{}, sip.ErrInsufficientBalance
		}
		return sip.Admission{}, sip.ErrUnknownNumber
	})
	srv, err := sip.New(cfg, testLogger(t), sip.Deps{Admitter: adm, Media: e.media, Calls: e.log, Trunks: trunks})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	e.srv = srv
	e.udp, err = srv.ListenUDP("127.0.0.1:0")
	require.NoError(t, err)
	e.tcp, err = srv.ListenTCP("127.0.0.1:0")
	require.NoError(t, err)
	return e
}

// startedSession waits until call id's media session has its stream.
func (e *env) startedSession(t testing.TB, id int64) *siptest.EchoSession {
	t.Helper()
	var s *siptest.EchoSession
	require.Eventually(t, func() bool {
		s = e.media.Session(id)
		return s != nil && len(s.Updates()) > 0
	}, 5*time.Second, 10*time.Millisecond)
	return s
}
