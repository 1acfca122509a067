package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"

	"github.com/voiced/voiced/codecs/g711"
	"github.com/voiced/voiced/codecs/resample"
)

// Phone calls: the scorecard is the caller's phone. It sends INVITEs to
// the node's SIP port with a PCMU offer, streams the microphone as RTP in
// real time from its own loopback port and hears the agent in the RTP that
// comes back. A call has no events: what the agent did is read from its
// audio alone.

// sipNumber is the number whose agent speaks agentTexts[i] first.
func sipNumber(i int) string { return fmt.Sprintf("+1415555010%d", i) }

// freeUDPPort is a loopback UDP port nobody holds right now.
func freeUDPPort() (int, error) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer pc.Close()
	return pc.LocalAddr().(*net.UDPAddr).Port, nil
}

// api calls the server's HTTP API with its key.
func (s *server) api(ctx context.Context, method, path, body string) (map[string]any, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+s.addr+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	return m, nil
}

// sipSetup gives the server a VoIP connection that admits loopback
// callers and, for each agent text, an interruptible agent that says it
// first on a number of its own.
func sipSetup(ctx context.Context, s *server) error {
	conn, err := s.api(ctx, "POST", "/v1/voip-connections", `{"host":"127.0.0.1","port":5999,"allowed_inbound_addresses":["127.0.0.1"],"codecs":["PCMU"]}`)
	if err != nil {
		return err
	}
	for i, text := range agentTexts {
		body, _ := json.Marshal(map[string]any{"name": fmt.Sprintf("Turns %d", i), "voice": "espeak:en-us", "inbound_speak_order": "agent_first",
			"first_message": text, "telephony": map[string]any{"interruptible": true}})
		ag, err := s.api(ctx, "POST", "/v1/agents", string(body))
		if err != nil {
			return err
		}
		num, err := s.api(ctx, "POST", "/v1/phone-numbers", fmt.Sprintf(`{"source":"voip","number":%q,"voip_connection_id":%v}`, sipNumber(i), conn["id"]))
		if err != nil {
			return err
		}
		if _, err := s.api(ctx, "PATCH", fmt.Sprintf("/v1/phone-numbers/%v", num["id"]), fmt.Sprintf(`{"inbound_agent_id":%v}`, ag["id"])); err != nil {
			return err
		}
	}
	return nil
}

var (
	sdpConn  = regexp.MustCompile(`(?m)^c=IN IP4 ([0-9.]+)`)
	sdpAudio = regexp.MustCompile(`(?m)^m=audio (\d+) `)
)

// dialSIP calls number on the node at sipAddr and returns the call as a
// session: its microphone goes out as PCMU RTP, the agent's RTP is played
// (resampled to the scorecard's rate) as it arrives.
func dialSIP(ctx context.Context, sipAddr, number string) (*session, error) {
	rtp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	sigPC, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		rtp.Close()
		return nil, err
	}
	local := sigPC.LocalAddr().(*net.UDPAddr)
	quiet := slog.New(slog.DiscardHandler)
	ua, err := sipgo.NewUA(sipgo.WithUserAgent("turnscore"),
		sipgo.WithUserAgentTransportLayerOptions(sip.WithTransportLayerLogger(quiet)),
		sipgo.WithUserAgentTransactionLayerOptions(sip.WithTransactionLayerLogger(quiet)))
	if err != nil {
		rtp.Close()
		sigPC.Close()
		return nil, err
	}
	fail := func(err error) (*session, error) {
		ua.Close()
		sigPC.Close()
		rtp.Close()
		return nil, err
	}
	srv, err := sipgo.NewServer(ua, sipgo.WithServerLogger(quiet))
	if err != nil {
		return fail(err)
	}
	client, err := sipgo.NewClient(ua, sipgo.WithClientHostname("127.0.0.1"), sipgo.WithClientPort(local.Port),
		sipgo.WithClientConnectionAddr(local.String()), sipgo.WithClientLogger(quiet))
	if err != nil {
		return fail(err)
	}
	contact := sip.ContactHeader{Address: sip.Uri{Scheme: "sip", User: "turnscore", Host: "127.0.0.1", Port: local.Port}}
	dialogs := sipgo.NewDialogClientCache(client, contact)
	byeFromNode := make(chan struct{})
	var byeOnce sync.Once
	srv.OnBye(func(req *sip.Request, tx sip.ServerTransaction) {
		_ = dialogs.ReadBye(req, tx)
		byeOnce.Do(func() { close(byeFromNode) })
	})
	srv.OnOptions(func(req *sip.Request, tx sip.ServerTransaction) {
		_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusOK, "OK", nil))
	})
	go func() { _ = srv.ServeUDP(sigPC) }()
	for i := 0; ; i++ {
		if c, err := ua.TransportLayer().GetConnection("udp", local.String()); err == nil && c != nil {
			break
		}
		if i == 200 {
			return fail(errors.New("sip: UDP listener did not register"))
		}
		time.Sleep(5 * time.Millisecond)
	}
	host, portStr, _ := net.SplitHostPort(sipAddr)
	port, _ := strconv.Atoi(portStr)
	rtpPort := rtp.LocalAddr().(*net.UDPAddr).Port
	id := rand.Uint64() >> 1
	offer := fmt.Sprintf("v=0\r\no=- %d %d IN IP4 127.0.0.1\r\ns=turnscore\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"+
		"m=audio %d RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\na=ptime:20\r\na=sendrecv\r\n", id, id, rtpPort)
	ct := sip.ContentTypeHeader("application/sdp")
	from := &sip.FromHeader{Address: sip.Uri{Scheme: "sip", User: "turnscore", Host: "127.0.0.1", Port: local.Port}, Params: sip.NewParams()}
	from.Params.Add("tag", sip.GenerateTagN(16))
	ictx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	d, err := dialogs.Invite(ictx, sip.Uri{Scheme: "sip", User: number, Host: host, Port: port}, []byte(offer), &ct, from)
	if err != nil {
		return fail(fmt.Errorf("invite: %w", err))
	}
	if err := d.WaitAnswer(ictx, sipgo.AnswerOptions{}); err != nil {
		d.Close()
		var de *sipgo.ErrDialogResponse
		if errors.As(err, &de) {
			return fail(fmt.Errorf("invite: %d %s", de.Res.StatusCode, de.Res.Reason))
		}
		return fail(fmt.Errorf("invite: %w", err))
	}
	if err := d.Ack(ictx); err != nil {
		d.Close()
		return fail(fmt.Errorf("ack: %w", err))
	}
	ans := string(d.InviteResponse.Body())
	mc, ma := sdpConn.FindStringSubmatch(ans), sdpAudio.FindStringSubmatch(ans)
	if mc == nil || ma == nil {
		d.Close()
		return fail(fmt.Errorf("answer without an audio address: %q", ans))
	}
	rport, _ := strconv.Atoi(ma[1])
	remote := &net.UDPAddr{IP: net.ParseIP(mc[1]), Port: rport}

	down, err := resample.New(rate, 8000, resample.QualityHigh)
	if err != nil {
		d.Close()
		return fail(err)
	}
	up, err := resample.New(8000, rate, resample.QualityHigh)
	if err != nil {
		down.Close()
		d.Close()
		return fail(err)
	}
	s := &session{ended: make(chan struct{}), notify: make(chan struct{}, 1), start: time.Now()}
	var seq uint16
	var ts uint32
	ssrc := rand.Uint32()
	var outFIFO []int16
	buf8 := make([]int16, 8000/50*2)
	pkt := make([]byte, 12+160)
	s.audioOut = func(pcm []int16) error {
		n, err := down.ProcessTo(buf8, pcm)
		if err != nil {
			return err
		}
		outFIFO = append(outFIFO, buf8[:n]...)
		for len(outFIFO) < 160 { // the filter's delay, at the start only
			outFIFO = append([]int16{0}, outFIFO...)
		}
		pkt[0], pkt[1] = 0x80, 0
		binary.BigEndian.PutUint16(pkt[2:], seq)
		binary.BigEndian.PutUint32(pkt[4:], ts)
		binary.BigEndian.PutUint32(pkt[8:], ssrc)
		g711.EncodeULawTo(pkt[12:], outFIFO[:160])
		outFIFO = outFIFO[160:]
		seq++
		ts += 160
		_, err = rtp.WriteToUDP(pkt, remote)
		return err
	}
	var hangOnce sync.Once
	s.hangup = func() {
		hangOnce.Do(func() {
			select {
			case <-byeFromNode:
			default:
				bctx, bcancel := context.WithTimeout(context.Background(), 5*time.Second)
				_ = d.Bye(bctx)
				bcancel()
			}
			d.Close()
			rtp.Close()
			ua.Close()
			sigPC.Close()
			down.Close()
		})
	}
	go func() {
		<-byeFromNode
		s.mu.Lock()
		if !s.clientX {
			s.closed, s.reason = "BYE from the node", true
		}
		s.mu.Unlock()
	}()
	// The agent's RTP, played as it arrives.
	go func() {
		defer close(s.ended)
		defer up.Close()
		b := make([]byte, 1500)
		pcm8 := make([]int16, 160)
		out := make([]int16, rate/50*2)
		var fifo []int16
		for {
			n, _, err := rtp.ReadFromUDP(b)
			if err != nil {
				return
			}
			at := s.now()
			if n < 12 || b[0]>>6 != 2 || b[1]&0x7f != 0 {
				continue
			}
			hdr := 12 + 4*int(b[0]&0x0f)
			if b[0]&0x10 != 0 && n >= hdr+4 {
				hdr += 4 + 4*int(binary.BigEndian.Uint16(b[hdr+2:]))
			}
			if n <= hdr || n-hdr > len(pcm8) {
				continue
			}
			k := g711.DecodeULawTo(pcm8, b[hdr:n])
			m, err := up.ProcessTo(out, pcm8[:k])
			if err != nil {
				return
			}
			fifo = append(fifo, out[:m]...)
			s.mu.Lock()
			for len(fifo) >= frame {
				s.addFrame(at, "sip", append([]int16(nil), fifo[:frame]...))
				fifo = fifo[frame:]
			}
			s.mu.Unlock()
		}
	}()
	return s, nil
}
