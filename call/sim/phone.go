package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voiced/voiced/media/pace"
	"github.com/voiced/voiced/media/rtp"
	"github.com/voiced/voiced/sip"
	"github.com/voiced/voiced/sip/sdp"
)

// Phone places simulated calls over SIP/RTP with voiced's own SIP stack
// (package sip, on sipgo) and RTP sessions (media/rtp) on a pacer of its
// own: the simulator is a separate user agent on loopback that dials the
// node's SIP address like a carrier would, and its audio and RFC 4733
// digits go over real RTP. It offers G.711 only, as a caller on the
// public telephone network would, and its caller talks at 8 kHz: the
// speech level and the SNR are set in the band the call carries (speech
// above 4 kHz, which a wideband level would count, never reaches the
// agent).
type Phone struct {
	log   *slog.Logger
	srv   *sip.Server
	pacer *pace.Pacer
	ports *rtp.Ports
	bind  netip.Addr
	next  atomic.Int64
	calls sync.Map // local call id → *phoneCall
	addr  netip.AddrPort

	// waiting are the calls Answer expects, by the number they ring,
	// oldest first.
	mu      sync.Mutex
	waiting map[string][]*phoneCall
}

// PhoneConfig is where the simulator's user agent listens.
type PhoneConfig struct {
	// Addr is the SIP listen address (default 127.0.0.1:0).
	Addr string
	// RTPLow and RTPHigh bound its RTP ports (default 43000-43999).
	RTPLow, RTPHigh int
}

// NewPhone starts the simulator's SIP user agent.
func NewPhone(cfg PhoneConfig, log *slog.Logger) (*Phone, error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.RTPLow == 0 {
		cfg.RTPLow, cfg.RTPHigh = 43000, 43999
	}
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("sim sip addr: %w", err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return nil, fmt.Errorf("sim sip addr: %w", err)
	}
	ports, err := rtp.NewPorts(cfg.RTPLow, cfg.RTPHigh)
	if err != nil {
		return nil, err
	}
	log = log.With("component", "simulated-caller")
	pacer, err := pace.New(pace.Config{}, log)
	if err != nil {
		return nil, err
	}
	p := &Phone{log: log, pacer: pacer, ports: ports, bind: ip}
	srv, err := sip.New(sip.Config{UserAgent: "voiced-simulator"}, log, sip.Deps{Admitter: p, Media: p, Calls: p})
	if err != nil {
		pacer.Close()
		return nil, err
	}
	la, err := srv.ListenUDP(cfg.Addr)
	if err != nil {
		srv.Close()
		pacer.Close()
		return nil, err
	}
	p.srv, p.addr = srv, la
	return p, nil
}

// Close hangs up the calls in progress and stops the user agent.
func (p *Phone) Close() {
	p.srv.Close()
	p.pacer.Close()
}

// Target is the number a simulated phone call rings and where.
type Target struct {
	// Host and Port are the node's SIP address; To the dialed number;
	// From the caller ID (default "+15550000000").
	Host string
	Port int
	To   string
	From string
}

// Call rings t and plays cfg's caller until it hangs up or the call ends
// (ctx bounds it: cfg.MaxDuration, default 90 s). An error means the
// call never started; a call that was refused or failed later is a
// Result whose End says why.
func (p *Phone) Call(ctx context.Context, t Target, cfg Config) (*Result, error) {
	ctx, cancel, err := cfg.bound(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	b, err := newBot(cfg, 8000)
	if err != nil {
		return nil, err
	}
	id := p.next.Add(1)
	pc := &phoneCall{p: p, bot: b, answered: make(chan struct{}), ended: make(chan struct{})}
	p.calls.Store(id, pc)
	defer p.calls.Delete(id)
	from := t.From
	if from == "" {
		from = "+15550000000"
	}
	res := &Result{Voice: VoiceFor(cfg.Scenario.Accent), Start: time.Now(), Rate: b.rate}
	if err := p.srv.Dial(ctx, sip.OutboundCall{CallID: id, From: from, To: t.To, Trunk: sip.Trunk{Host: t.Host, Port: t.Port, Transport: "udp", Codecs: []string{"PCMU", "PCMA"}}}); err != nil {
		return nil, fmt.Errorf("sim: dial %s: %w", t.To, err)
	}
	res.SIPCallID = pc.sipCallID
	select {
	case <-pc.answered:
		converse(ctx, cfg, b, pc, res)
	case <-pc.ended:
	case <-ctx.Done():
		pc.Hangup()
	}
	select {
	case <-pc.ended:
	case <-time.After(10 * time.Second):
		return nil, errors.New("sim: the call did not end 10 s after the hangup")
	}
	if e := pc.end; e.Answered.IsZero() {
		res.End = "not_answered: " + e.Reason
		if e.Detail != "" {
			res.End += " (" + e.Detail + ")"
		}
	} else if e.Reason == "callee_hangup" && res.End == "caller_hangup" {
		res.End = "agent_hangup"
	}
	res.Duration = time.Since(res.Start)
	if pc.rtp != nil {
		res.PacingP50, _ = pc.rtp.TransitDeviation(0.5)
		res.PacingP99, _ = pc.rtp.TransitDeviation(0.99)
		m := pc.rtp.Metrics()
		res.Packets, res.Lost = m.PacketsReceived.Load(), m.PacketsLost.Load()
	}
	if cfg.KeepAudio {
		b.mu.Lock()
		res.Sent, res.Speech, res.Tone = b.sent, b.speech, b.tone
		b.mu.Unlock()
	}
	return res, nil
}

// Addr is where the simulator's user agent takes SIP (UDP).
func (p *Phone) Addr() netip.AddrPort { return p.addr }

// ErrNotRung is Answer's error when the expected call never arrived.
var ErrNotRung = errors.New("sim: the agent's call did not arrive")

// Answer is the simulated caller on the called side: it expects a call
// to number at its user agent (Addr), has ring place it (the agent's
// outbound call, sent to Addr), answers it and plays cfg's caller until
// the call ends (ctx bounds it, as Call). The call must arrive within
// 30 s of ring returning. Calls to the same number are answered in the
// order Answer was called. An error means the call never started.
func (p *Phone) Answer(ctx context.Context, number string, cfg Config, ring func(ctx context.Context) error) (*Result, error) {
	ctx, cancel, err := cfg.bound(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	b, err := newBot(cfg, 8000)
	if err != nil {
		return nil, err
	}
	number = sip.Number(number)
	pc := &phoneCall{p: p, bot: b, answered: make(chan struct{}), ended: make(chan struct{}), arrived: make(chan struct{})}
	p.mu.Lock()
	if p.waiting == nil {
		p.waiting = map[string][]*phoneCall{}
	}
	p.waiting[number] = append(p.waiting[number], pc)
	p.mu.Unlock()
	unwait := func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		q := p.waiting[number]
		for i, w := range q {
			if w == pc {
				p.waiting[number] = append(q[:i:i], q[i+1:]...)
				if len(p.waiting[number]) == 0 {
					delete(p.waiting, number)
				}
				return true
			}
		}
		return false
	}
	res := &Result{Voice: VoiceFor(cfg.Scenario.Accent), Start: time.Now(), Rate: b.rate}
	if err := ring(ctx); err != nil {
		if unwait() {
			return nil, err
		}
		// Admitted meanwhile: the call is ours to end.
	}
	select {
	case <-pc.arrived:
	case <-time.After(30 * time.Second):
	case <-ctx.Done():
	}
	if unwait() {
		return nil, ErrNotRung
	}
	<-pc.arrived
	defer p.calls.Delete(pc.id)
	select {
	case <-pc.answered:
		converse(ctx, cfg, b, pc, res)
	case <-pc.ended:
	case <-ctx.Done():
		pc.Hangup()
	}
	select {
	case <-pc.ended:
	case <-time.After(10 * time.Second):
		return nil, errors.New("sim: the call did not end 10 s after the hangup")
	}
	res.SIPCallID = pc.sipCallID
	if e := pc.end; e.Answered.IsZero() {
		res.End = "not_answered: " + e.Reason
		if e.Detail != "" {
			res.End += " (" + e.Detail + ")"
		}
	}
	res.Duration = time.Since(res.Start)
	if cfg.KeepAudio {
		b.mu.Lock()
		res.Sent, res.Speech = b.sent, b.speech
		b.mu.Unlock()
	}
	return res, nil
}

// Admit implements sip.Admitter: a call to a number Answer expects is
// the oldest expectation's; any other is refused as unknown.
func (p *Phone) Admit(_ context.Context, a sip.Arrival) (sip.Admission, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.waiting[a.To]
	if len(q) == 0 {
		return sip.Admission{}, sip.ErrUnknownNumber
	}
	pc := q[0]
	if len(q) == 1 {
		delete(p.waiting, a.To)
	} else {
		p.waiting[a.To] = q[1:]
	}
	pc.id = p.next.Add(1)
	p.calls.Store(pc.id, pc)
	close(pc.arrived)
	return sip.Admission{CallID: pc.id}, nil
}

// Open implements sip.MediaPort: the call's RTP session, fed by its bot.
func (p *Phone) Open(_ context.Context, c *sip.Call) (sip.Media, error) {
	v, ok := p.calls.Load(c.ID())
	if !ok {
		return nil, errors.New("sim: no such call")
	}
	pc := v.(*phoneCall)
	s, err := rtp.NewSession(rtp.Config{Local: p.bind, MediaTimeout: -1, TransitStats: true}, p.log, p.pacer, p.ports)
	if err != nil {
		return nil, err
	}
	pc.call, pc.rtp, pc.sipCallID = c, s, c.SIPCallID()
	return pc, nil
}

// Finish implements sip.CallLog.
func (p *Phone) Finish(_ context.Context, id int64, e sip.End) error {
	if v, ok := p.calls.Load(id); ok {
		pc := v.(*phoneCall)
		pc.end = e
		close(pc.ended)
	}
	return nil
}

// phoneCall is one simulated phone call's media (sip.Media) and the
// bot's channel.
type phoneCall struct {
	p         *Phone
	bot       *bot
	call      *sip.Call
	rtp       *rtp.Session
	sipCallID string
	id        int64
	arrived   chan struct{} // Answer's: the call was admitted
	once      sync.Once
	answered  chan struct{}
	ended     chan struct{}
	end       sip.End
}

func (c *phoneCall) LocalAddr() netip.AddrPort { return c.rtp.LocalAddr() }

func (c *phoneCall) Update(st sip.Stream) error {
	err := c.rtp.Update(rtp.Params{Remote: st.Remote, Codec: codec(st.Codec), RecvPT: st.RecvPT, DTMF: codec(st.DTMF),
		RecvDTMFPT: st.RecvDTMFPT, Send: st.Sends(), Receive: st.Receives()})
	if err != nil {
		return err
	}
	c.once.Do(func() {
		_ = c.rtp.SetSource(c.bot, c.bot.rate)
		c.rtp.SetSink(c.bot) // 16 kHz, what speech-to-text takes
		close(c.answered)
	})
	return nil
}

func codec(c sdp.Codec) rtp.Codec {
	return rtp.Codec{PT: c.PT, Name: c.Name, ClockRate: c.ClockRate, Channels: c.Channels}
}

func (c *phoneCall) Close() error { return c.rtp.Close() }

func (c *phoneCall) DTMF(digits string) (string, error) {
	return "rfc4733", c.rtp.SendDTMF(digits, 100*time.Millisecond)
}

func (c *phoneCall) Hangup() {
	if c.call != nil {
		c.call.Hangup("caller_hangup")
	}
}

func (c *phoneCall) Done() <-chan struct{} { return c.ended }

func (c *phoneCall) Transcript() (string, bool) { return "", false }
