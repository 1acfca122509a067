package call

import (
	"context"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	prtp "github.com/pion/rtp"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/codecs/g711"
	"github.com/voiced/voiced/media/pace"
	"github.com/voiced/voiced/media/rtp"
	"github.com/voiced/voiced/sip"
	"github.com/voiced/voiced/sip/siptest"
)

// tonePeer is a Go RTP endpoint of a test: it sends PCMU of a sine at
// send Hz every 20 ms to where to says, and counts the packets it gets
// whose audio is a sine at detect Hz.
type tonePeer struct {
	conn         *net.UDPConn
	send, detect float64
	heard        atomic.Int64
	from         atomic.Pointer[netip.AddrPort]
}

func newTonePeer(t *testing.T, send, detect float64) *tonePeer {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP("127.0.0.1")})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	p := &tonePeer{conn: c, send: send, detect: detect}
	go p.listen()
	return p
}

func (p *tonePeer) port() int { return p.conn.LocalAddr().(*net.UDPAddr).Port }

func (p *tonePeer) listen() {
	buf := make([]byte, 1500)
	pcm := make([]int16, 160)
	for {
		n, from, err := p.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		p.from.Store(&from)
		var pkt prtp.Packet
		if pkt.Unmarshal(buf[:n]) != nil || pkt.PayloadType != 0 || len(pkt.Payload) != 160 {
			continue
		}
		g711.DecodeULawTo(pcm, pkt.Payload)
		if toneShare(pcm, p.detect) > 0.5 {
			p.heard.Add(1)
		}
	}
}

// run sends until ctx ends; to returns the destination (false: not yet
// known).
func (p *tonePeer) run(ctx context.Context, to func() (netip.AddrPort, bool)) {
	pkt := prtp.Packet{Header: prtp.Header{Version: 2, PayloadType: 0, SSRC: uint32(p.port())}, Payload: make([]byte, 160)}
	pcm := make([]int16, 160)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for i := range pcm {
			pcm[i] = int16(8000 * math.Sin(2*math.Pi*p.send*float64(n*160+i)/8000))
		}
		g711.EncodeULawTo(pkt.Payload, pcm)
		pkt.SequenceNumber, pkt.Timestamp = uint16(n), uint32(n*160)
		if dst, ok := to(); ok {
			b, _ := pkt.Marshal()
			p.conn.WriteToUDPAddrPort(b, dst)
		}
	}
}

// toneShare is the share of pcm's energy (8 kHz) at f Hz (Goertzel),
// 0 for near silence.
func toneShare(pcm []int16, f float64) float64 {
	coeff := 2 * math.Cos(2*math.Pi*f/8000)
	var s1, s2, energy float64
	for _, v := range pcm {
		x := float64(v)
		s1, s2 = x+coeff*s1-s2, s1
		energy += x * x
	}
	if energy/float64(len(pcm)) < 1000*1000 {
		return 0
	}
	power := s1*s1 + s2*s2 - coeff*s1*s2
	return power / (energy * float64(len(pcm)) / 2)
}

type trunkOf map[string]sip.InboundTrunk

func (m trunkOf) InboundTrunk(_ context.Context, n string) (sip.InboundTrunk, bool, error) {
	t, ok := m[n]
	return t, ok, nil
}

// TestTransferBridgeFallback: a caller (sipp for SIP, a Go RTP peer
// sending a 400 Hz tone) reaches the node's telephony (real RTP sessions
// on the node's pacer, the loopback engine); the agent's transfer goes
// out as REFER, which the caller refuses (405, or 202 and a NOTIFY with
// 603). The node then INVITEs the destination through the number's trunk
// (a second sipp, which challenges with 401), relays the caller's audio
// to the destination's RTP address (a Go peer sending 1 kHz) and the
// destination's to the caller; when the destination hangs up the caller
// gets BYE and the call ends ai_transfer.
func TestTransferBridgeFallback(t *testing.T) {
	siptest.Binary(t, "sipp", "sip-tester")
	for _, tc := range []struct {
		name   string
		code   int
		notify bool
	}{{"REFER 405", 405, false}, {"NOTIFY 603", 603, true}} {
		t.Run(tc.name, func(t *testing.T) {
			log := slog.New(slog.DiscardHandler)
			ports, err := rtp.NewPorts(43000, 43199)
			require.NoError(t, err)
			pacer, err := pace.New(pace.Config{}, log)
			require.NoError(t, err)
			defer pacer.Close()
			tel := &Phone{log: log, blobDir: t.TempDir(), rtpCfg: rtp.Config{Local: netip.MustParseAddr("127.0.0.1")}, pacer: pacer, ports: ports}

			caller, callee := newTonePeer(t, 400, 1000), newTonePeer(t, 1000, 400)
			uas := siptest.Sipp(t, scenario(t, "uas_bridge.xml", map[string]any{"MediaPort": callee.port(), "HoldMS": 2500,
				"User": `\+14155550123`}), 20*time.Second, "-m", "1")
			calls := siptest.NewLog()
			srv, err := sip.New(sip.Config{}, log, sip.Deps{Media: tel, Calls: calls,
				Admitter: siptest.AdmitFunc(func(context.Context, sip.Arrival) (sip.Admission, error) { return sip.Admission{CallID: 1}, nil }),
				Trunks: trunkOf{"+14155550100": {Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
					Outbound: &sip.Trunk{Host: "127.0.0.1", Port: uas.Port, Username: "alice", Password: "secret", Codecs: []string{"PCMU"}}}}})
			require.NoError(t, err)
			defer srv.Close()
			tel.srv = srv
			addr, err := srv.ListenUDP("127.0.0.1:0")
			require.NoError(t, err)

			uac := siptest.Sipp(t, scenario(t, "uac_refer_refused.xml", map[string]any{"MediaPort": caller.port(), "Code": tc.code,
				"Notify": tc.notify}), 20*time.Second, "-s", "+14155550100", "-m", "1", addr.String())
			var m *callMedia
			require.Eventually(t, func() bool {
				v, ok := tel.media.Load(int64(1))
				if ok {
					m = v.(*callMedia)
				}
				return ok
			}, 10*time.Second, 10*time.Millisecond)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go caller.run(ctx, func() (netip.AddrPort, bool) { return m.LocalAddr(), true })
			go callee.run(ctx, func() (netip.AddrPort, bool) {
				if p := callee.from.Load(); p != nil {
					return *p, true
				}
				return netip.AddrPort{}, false
			})
			time.Sleep(300 * time.Millisecond) // the call is answered and the caller's RTP flows
			require.Zero(t, callee.heard.Load())
			require.Zero(t, caller.heard.Load(), "the agent does not play 1 kHz")

			tctx, tcancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer tcancel()
			require.NoError(t, m.call.Transfer(tctx, "+14155550123"))
			require.True(t, m.call.Bridged())
			require.NoError(t, uas.Wait(), "the destination got the INVITE, answered and hung up")
			require.NoError(t, uac.Wait(), "the caller got BYE")
			end := calls.Wait(t, 1, 5*time.Second)
			require.Equal(t, sip.StatusCompleted, end.Status)
			require.Equal(t, sip.ReasonTransfer, end.Reason)
			// 2.5 s bridged: about 125 packets each way.
			t.Logf("heard callee=%d caller=%d", callee.heard.Load(), caller.heard.Load())
			require.Greater(t, callee.heard.Load(), int64(50), "the destination hears the caller's tone")
			require.Greater(t, caller.heard.Load(), int64(50), "the caller hears the destination's tone")
		})
	}
}

// scenario fills a templated sipp scenario of sip/testdata.
func scenario(t *testing.T, name string, data any) string {
	return siptest.Scenario(t, "../sip/testdata/sipp/"+name+".tmpl", data)
}
