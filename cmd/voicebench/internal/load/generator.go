package load

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voiced/voiced/cmd/voicebench/internal/audio"
	"github.com/voiced/voiced/cmd/voicebench/internal/procstat"
	"github.com/voiced/voiced/cmd/voicebench/internal/rtpstat"
	"github.com/voiced/voiced/codecs/opus"
	"github.com/voiced/voiced/media/pace"
)

// Generator keeps calls up against a Target and measures them. Its
// methods are safe for concurrent use; Scale and Measure are meant to be
// called from one controlling goroutine.
type Generator struct {
	cfg    Config
	target Target
	log    *slog.Logger
	frames [][]byte

	lanes  []*lane
	pacer  *pace.Pacer
	sender *sender
	handle pace.Handle

	ctx    context.Context // cancelled by Stop: every call hangs up
	cancel context.CancelFunc
	wg     sync.WaitGroup // call goroutines

	mu       sync.Mutex // guards the fields below and the sender's call list
	live     []*call
	mediaAll rtpstat.Histogram // |D| of media sessions, whole run
	results  []CallResult
	next     time.Time // earliest start of the next call attempt (rate limit)
	maintain bool
	want     int
	index    int
	stopped  bool

	started atomic.Int64
	active  atomic.Int64
	failed  atomic.Int64
	setupOK atomic.Int64
	probed  atomic.Int64
}

// Progress is a live view of a Generator for progress displays.
type Progress struct {
	Started, Active, Failed int64
	Sent, Received          uint64
	PacerLateP99            time.Duration
}

// New opens the lanes, starts the pacer and returns a Generator with no
// calls yet.
func New(cfg Config, target Target, log *slog.Logger) (*Generator, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	frames, err := cfg.Source.Frames(cfg.Codec.Name)
	if err != nil {
		return nil, err
	}
	g := &Generator{cfg: cfg, target: target, log: log, frames: frames}
	for range cfg.Lanes {
		l, err := openLane(cfg.Local, cfg.SocketBuffer)
		if err != nil {
			g.closeLanes()
			return nil, err
		}
		g.lanes = append(g.lanes, l)
	}
	f, off := cfg.Source.Onset(8000)
	g.sender = newSender(g.lanes, cfg.Phases, f, time.Duration(off)*time.Second/8000)
	g.pacer, err = pace.New(pace.Config{Period: 20 * time.Millisecond / time.Duration(cfg.Phases), MaxLag: maxLag}, log)
	if err != nil {
		g.closeLanes()
		return nil, err
	}
	if g.handle, err = g.pacer.Register(g.sender); err != nil {
		g.pacer.Close()
		g.closeLanes()
		return nil, err
	}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	return g, nil
}

func (g *Generator) closeLanes() {
	for _, l := range g.lanes {
		l.close()
	}
}

// Progress returns live counters.
func (g *Generator) Progress() Progress {
	p := Progress{Started: g.started.Load(), Active: g.active.Load(), Failed: g.failed.Load(), Sent: g.sender.sent.Load()}
	for _, l := range g.lanes {
		p.Received += l.received.Load()
	}
	p.PacerLateP99 = g.pacer.Stats().LateP99
	return p
}

// Scale brings the number of live calls to n, starting calls at
// Config.Rate, and waits until every attempt has set up or failed. It
// returns how many attempts failed. Scaling down is not supported: n
// below the live count does nothing.
func (g *Generator) Scale(ctx context.Context, n int) (failed int, err error) {
	g.mu.Lock()
	if g.stopped {
		g.mu.Unlock()
		return 0, ErrStopped
	}
	g.want = n
	k := n - len(g.live)
	g.mu.Unlock()
	if k <= 0 {
		return 0, nil
	}
	var wg sync.WaitGroup
	var fails atomic.Int64
	for range k {
		if err := g.waitSlot(ctx); err != nil {
			wg.Wait()
			return int(fails.Load()), err
		}
		wg.Add(1)
		g.launch(func(ok bool) {
			if !ok {
				fails.Add(1)
			}
			wg.Done()
		})
	}
	wg.Wait()
	return int(fails.Load()), nil
}

// Maintain turns replacement on or off: with it on, a call that ends
// (its Duration ran out, or the target hung up) is replaced, at
// Config.Rate, while fewer than the last Scale target are live.
func (g *Generator) Maintain(on bool) {
	g.mu.Lock()
	g.maintain = on
	g.mu.Unlock()
}

// waitSlot waits for the rate limiter.
func (g *Generator) waitSlot(ctx context.Context) error {
	g.mu.Lock()
	now := time.Now()
	at := g.next
	if at.Before(now) {
		at = now
	}
	g.next = at.Add(time.Duration(float64(time.Second) / g.cfg.Rate))
	g.mu.Unlock()
	t := time.NewTimer(time.Until(at))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-g.ctx.Done():
		return ErrStopped
	}
}

// launch starts one call attempt; setup is called once with whether the
// call came up.
func (g *Generator) launch(setup func(ok bool)) {
	g.mu.Lock()
	idx := g.index
	g.index++
	g.mu.Unlock()
	g.started.Add(1)
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		g.runCall(idx, setup)
	}()
}

func (g *Generator) newCall(idx int) *call {
	send := idx % len(g.lanes)
	recv := send
	if g.cfg.Topology == Relay && len(g.lanes) > 1 {
		recv = (idx + 1) % len(g.lanes)
	}
	c := &call{
		index:  idx,
		phase:  idx % g.cfg.Phases,
		ssrc:   uint32(0x5b000000) | uint32(idx&0xffffff),
		codec:  g.cfg.Codec,
		frames: g.frames,
		seq:    uint16(rand.Uint32()),
		ts:     rand.Uint32(),
		pkt:    make([]byte, 12+maxLen(g.frames)),
		sendLn: send,
		recvLn: recv,
	}
	c.hdr.Version = 2
	c.hdr.PayloadType = g.cfg.Codec.PT
	c.hdr.SSRC = c.ssrc
	return c
}

func maxLen(frames [][]byte) int {
	n := 0
	for _, f := range frames {
		n = max(n, len(f))
	}
	return n
}

// runCall is one call's life: setup, media until it ends, hangup, result.
func (g *Generator) runCall(idx int, setup func(bool)) {
	c := g.newCall(idx)
	res := CallResult{Index: idx, Codec: g.cfg.Codec.Name, Start: time.Now()}
	offer := Offer{Index: idx, Codec: g.cfg.Codec, SendFrom: g.lanes[c.sendLn].conn.LocalAddr(),
		RecvOn: g.lanes[c.recvLn].conn.LocalAddr(), SSRC: c.ssrc}
	sctx, cancel := context.WithTimeout(g.ctx, g.cfg.SetupTimeout)
	sess, ans, err := g.target.Dial(sctx, offer)
	cancel()
	res.Setup = time.Since(res.Start)
	if err != nil {
		g.failed.Add(1)
		res.Err = err.Error()
		g.finish(c, res, false)
		setup(false)
		return
	}
	c.answeredAt = time.Now().UnixNano()
	if ms, ok := sess.(MediaSession); ok {
		c.media = ms
		g.up(c, setup)
		g.hold(c, sess, &res)
		g.finish(c, res, true)
		g.replace()
		return
	}
	c.dest = ans.SendTo
	if !ans.OnRecvLane {
		c.recvLn = c.sendLn
	}
	from := ans.ReplyFrom
	if !from.IsValid() {
		from = ans.SendTo
	}
	if err := g.prepareRx(c, ans); err != nil {
		res.Err = err.Error()
		g.failed.Add(1)
		_ = g.hangup(sess)
		g.finish(c, res, false)
		setup(false)
		return
	}
	rl := g.lanes[c.recvLn]
	rl.route(from.Port(), c)
	g.up(c, setup)
	g.hold(c, sess, &res)
	rl.unroute(from.Port(), c)
	g.finish(c, res, true)
	g.replace()
}

// up makes a call live: the pacer sends for it from the next tick.
func (g *Generator) up(c *call, setup func(bool)) {
	g.addLive(c)
	g.setupOK.Add(1)
	g.active.Add(1)
	setup(true)
}

// hold keeps a call up until its duration ends, the target hangs up or
// the generator stops, then hangs up; res gets the call's end.
func (g *Generator) hold(c *call, sess Session, res *CallResult) {
	var timeout <-chan time.Time
	if g.cfg.Duration > 0 {
		t := time.NewTimer(g.cfg.Duration)
		defer t.Stop()
		timeout = t.C
	}
	remote := false
	select {
	case <-g.ctx.Done():
	case <-timeout:
	case <-sess.Ended():
		remote = true
	}
	g.removeLive(c)
	g.active.Add(-1)
	res.Duration = time.Since(res.Start) - res.Setup
	if remote {
		res.Err = ErrRemoteHangup.Error()
		res.EndedBy = "target"
	} else {
		res.EndedBy = "voicebench"
		if err := g.hangup(sess); err != nil {
			res.HangupErr = err.Error()
		}
	}
}

func (g *Generator) hangup(sess Session) error {
	ctx, cancel := context.WithTimeout(context.Background(), g.cfg.HangupTimeout)
	defer cancel()
	return sess.Hangup(ctx)
}

// prepareRx sets up the receive statistics and, for probed calls, the
// decoder.
func (g *Generator) prepareRx(c *call, ans Answer) error {
	rx := &c.rx
	rx.codec = ans.Codec
	rx.stream.Reset(ans.Codec.Clock)
	c.ownSeq = g.cfg.Topology != Agent && strings.EqualFold(ans.Codec.Name, g.cfg.Codec.Name)
	if g.probed.Load() >= int64(g.cfg.Probe) {
		return nil
	}
	g.probed.Add(1)
	c.probed = true
	rx.onset = audio.NewOnset(8000)
	rx.pcm = make([]int16, 960)
	switch ans.Codec.Name {
	case "PCMU", "PCMA":
	case "opus":
		d, err := opus.NewDecoder(8000, 1)
		if err != nil {
			return err
		}
		rx.opus = d
	default:
		return fmt.Errorf("cannot decode %s", ans.Codec.Name)
	}
	return nil
}

func (g *Generator) addLive(c *call) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.live = append(g.live, c)
	list := append([]*call(nil), g.live...)
	g.sender.calls.Store(&list)
}

func (g *Generator) removeLive(c *call) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if i := slices.Index(g.live, c); i >= 0 {
		g.live = slices.Delete(g.live, i, i+1)
	}
	list := append([]*call(nil), g.live...)
	g.sender.calls.Store(&list)
}

// replace starts a new call when Maintain is on and calls are missing.
func (g *Generator) replace() {
	g.mu.Lock()
	need := g.maintain && !g.stopped && len(g.live) < g.want
	g.mu.Unlock()
	if !need || g.ctx.Err() != nil {
		return
	}
	if g.waitSlot(g.ctx) != nil {
		return
	}
	g.launch(func(bool) {})
}

// finish computes a call's result from its receive state (under its
// lane's mutex) and stores it.
func (g *Generator) finish(c *call, res CallResult, up bool) {
	res.OneWayMs, res.ResponseMs, res.FirstAudioMs = -1, -1, -1
	switch {
	case up && c.media != nil:
		g.fillResult(c, &res)
		var h rtpstat.Histogram
		c.media.DrainJitter(&h)
		g.mu.Lock()
		g.mediaAll.Merge(&h)
		g.mu.Unlock()
	case up:
		l := g.lanes[c.recvLn]
		l.mu.Lock()
		g.fillResult(c, &res)
		l.mu.Unlock()
	}
	res.Sent = c.sent.Load()
	res.SetupMs, res.DurationMs = ms(res.Setup), ms(res.Duration)
	for _, l := range res.Lags {
		res.LagsMs = append(res.LagsMs, ms(l))
	}
	g.mu.Lock()
	g.results = append(g.results, res)
	g.mu.Unlock()
}

// Stop ends every call (hanging up), stops the pacer and the lanes, and
// returns the results of every call attempted, ordered by index.
func (g *Generator) Stop() []CallResult {
	g.mu.Lock()
	g.stopped = true
	g.maintain = false
	g.mu.Unlock()
	g.cancel()
	g.wg.Wait()
	g.pacer.Unregister(g.handle)
	g.pacer.Close()
	g.closeLanes()
	g.mu.Lock()
	defer g.mu.Unlock()
	slices.SortFunc(g.results, func(a, b CallResult) int { return a.Index - b.Index })
	return g.results
}

// JitterHistogram returns the |D| distribution of the whole run so far.
func (g *Generator) JitterHistogram() *rtpstat.Histogram {
	var h rtpstat.Histogram
	for _, l := range g.lanes {
		l.mu.Lock()
		h.Merge(&l.all)
		l.mu.Unlock()
	}
	g.mu.Lock()
	h.Merge(&g.mediaAll)
	g.mu.Unlock()
	return &h
}

// Measure runs one measurement window of length d at the current load
// and returns its figures. Counters are taken from the returning streams'
// sequence numbers at both ends of the window, so packets in flight at
// the edges are not counted as lost.
func (g *Generator) Measure(ctx context.Context, d time.Duration) (Window, error) {
	if g.ctx.Err() != nil {
		return Window{}, ErrStopped
	}
	start := g.snapshot()
	select {
	case <-time.After(d):
	case <-ctx.Done():
		return Window{}, ctx.Err()
	case <-g.ctx.Done():
		return Window{}, ErrStopped
	}
	end := g.snapshot()
	return g.window(start, end), nil
}

// snap is the generator's state at a window edge.
type snap struct {
	at       time.Time
	perCall  map[*call]rtpstat.Summary
	sent     uint64 // packets the sender wrote, all calls
	failed   int64
	hist     rtpstat.Histogram
	late     rtpstat.Histogram // the generator's tick lateness since the last snapshot
	pacer    pace.Stats
	targets  time.Duration
	self     time.Duration
	host     procstat.Host
	hostErr  error
	calls    int
	jitterRF []float64 // per-call RFC 3550 J, ms
}

func (g *Generator) snapshot() *snap {
	s := &snap{at: time.Now(), perCall: map[*call]rtpstat.Summary{}}
	g.mu.Lock()
	live := append([]*call(nil), g.live...)
	g.mu.Unlock()
	s.calls = len(live)
	byLane := make([][]*call, len(g.lanes))
	for _, c := range live {
		if c.media != nil {
			sum := c.media.Stats()
			s.perCall[c] = sum
			s.jitterRF = append(s.jitterRF, sum.JitterMs)
			var h rtpstat.Histogram
			c.media.DrainJitter(&h)
			s.hist.Merge(&h)
			g.mu.Lock()
			g.mediaAll.Merge(&h)
			g.mu.Unlock()
			continue
		}
		byLane[c.recvLn] = append(byLane[c.recvLn], c)
	}
	for i, l := range g.lanes {
		l.mu.Lock()
		for _, c := range byLane[i] {
			sum := c.rx.stream.Summary()
			s.perCall[c] = sum
			s.jitterRF = append(s.jitterRF, sum.JitterMs)
		}
		s.hist.Merge(&l.win)
		l.win.Reset()
		l.mu.Unlock()
	}
	s.sent = g.sender.sent.Load()
	s.failed = g.failed.Load()
	s.pacer = g.pacer.Stats()
	g.sender.takeLateness(&s.late)
	for _, pid := range g.cfg.TargetPIDs {
		if t, err := procstat.Process(pid); err == nil {
			s.targets += t
		}
	}
	s.self, _ = procstat.Process(os.Getpid())
	s.host, s.hostErr = procstat.ReadHost()
	return s
}
