package load

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/voiced/voiced/cmd/voicebench/internal/rtpstat"
	"github.com/voiced/voiced/cmd/voicebench/internal/udp"
)

// sender is the one pacer Stream of the generator: each tick it sends the
// next packet of every call in the tick's phase, in one batch per lane.
// A packet carrying the source's onset goes out alone just before the
// batches, so the send time recorded for it is right to microseconds
// whatever the batch size (onsets are one frame per cycle, a handful per
// tick even with thousands of calls).
type sender struct {
	lanes    []*lane
	phases   int
	onsetAt  int           // frame index of the source's onset in a cycle
	onsetOff time.Duration // the onset's offset within that frame (8 kHz)
	calls    atomic.Pointer[[]*call]
	tick     uint64
	batches  [][]udp.Message // per lane, reused
	owners   [][]*call       // the call of each batched message
	seqs     [][]uint16      // and its sequence number
	onsets   []*call         // calls sending their onset this tick, reused
	sent     atomic.Uint64
	dropped  atomic.Uint64 // packets the socket refused
	cost     atomic.Int64  // ns the last tick took

	// The generator's own timeliness: how late each tick started against
	// the schedule base + n*period, for the windows.
	period  time.Duration
	base    time.Time
	n       int64
	lateMu  sync.Mutex
	lateWin rtpstat.Histogram
}

// maxLag is how far behind the pacer may fall before it skips ticks; the
// generator prefers catching up (its packets carry their send times).
const maxLag = 100 * time.Millisecond

func newSender(lanes []*lane, phases, onsetFrame int, onsetOff time.Duration) *sender {
	s := &sender{lanes: lanes, phases: phases, onsetAt: onsetFrame, onsetOff: onsetOff, period: 20 * time.Millisecond / time.Duration(phases),
		batches: make([][]udp.Message, len(lanes)), owners: make([][]*call, len(lanes)), seqs: make([][]uint16, len(lanes))}
	empty := []*call{}
	s.calls.Store(&empty)
	return s
}

// Tick implements pace.Stream.
func (s *sender) Tick(now time.Time) {
	start := time.Now()
	s.noteLateness(now)
	phase := int(s.tick % uint64(s.phases))
	s.tick++
	for i := range s.batches {
		s.batches[i], s.owners[i], s.seqs[i] = s.batches[i][:0], s.owners[i][:0], s.seqs[i][:0]
	}
	s.onsets = s.onsets[:0]
	for _, c := range *s.calls.Load() {
		if c.phase != phase {
			continue
		}
		if c.media != nil {
			c.media.SendFrame(c.frame)
			c.advance()
			s.sent.Add(1)
			continue
		}
		if c.frame == s.onsetAt {
			s.onsets = append(s.onsets, c)
			continue
		}
		l := c.sendLn
		s.owners[l] = append(s.owners[l], c)
		s.seqs[l] = append(s.seqs[l], c.seq)
		s.batches[l] = append(s.batches[l], s.next(c))
	}
	for _, c := range s.onsets {
		seq := c.seq
		m := [1]udp.Message{s.next(c)}
		now := time.Now()
		c.recordOnset(now.Add(s.onsetOff).UnixNano())
		c.recordSend(seq, now.UnixNano())
		s.write(c.sendLn, m[:])
	}
	for i, b := range s.batches {
		if len(b) == 0 {
			continue
		}
		now := time.Now().UnixNano()
		for j, c := range s.owners[i] {
			c.recordSend(s.seqs[i][j], now)
		}
		s.write(i, b)
	}
	s.cost.Store(int64(time.Since(start)))
}

// next builds c's next packet and advances its frame.
func (s *sender) next(c *call) udp.Message {
	m := udp.Message{Buf: c.packet(c.frames[c.frame]), Addr: c.dest}
	c.advance()
	return m
}

// noteLateness records how late this tick started. The schedule is
// rebased when the pacer had to skip ticks (the count no longer matches).
func (s *sender) noteLateness(now time.Time) {
	if s.base.IsZero() {
		s.base = now
	}
	late := now.Sub(s.base.Add(time.Duration(s.n) * s.period))
	if late > maxLag || late < -s.period {
		s.base, s.n, late = now, 0, 0
	}
	s.n++
	s.lateMu.Lock()
	s.lateWin.Add(int64(late))
	s.lateMu.Unlock()
}

// takeLateness moves the window's tick lateness into h.
func (s *sender) takeLateness(h *rtpstat.Histogram) {
	s.lateMu.Lock()
	h.Merge(&s.lateWin)
	s.lateWin.Reset()
	s.lateMu.Unlock()
}

func (s *sender) write(lane int, ms []udp.Message) {
	n, err := s.lanes[lane].conn.WriteBatch(ms)
	s.sent.Add(uint64(n))
	if err != nil {
		s.dropped.Add(uint64(len(ms) - n))
	}
}
