package jitter

import (
	"fmt"
	"time"
)

// Packet is one received RTP packet as the Buffer needs it.
type Packet struct {
	// Seq and Timestamp are the RTP header fields (RFC 3550 section 5.1).
	Seq       uint16
	Timestamp uint32
	// Marker is the RTP marker bit: for audio, the first packet of a
	// talkspurt (RFC 3551 section 4.1).
	Marker bool
	// CN marks an RFC 3389 comfort noise packet: silence at the level it
	// carries lasts from its timestamp until the next packet.
	CN bool
	// Samples is the audio duration in clock units (160 for 20 ms of
	// G.711). Zero means unknown: the buffer then assumes the duration of
	// the previous packet, or one frame.
	Samples int
	// Payload is copied by Push; the caller may reuse it at once.
	Payload []byte
}

// Verdict is what Push did with a packet.
type Verdict uint8

// The verdicts of Push.
const (
	// Accepted: the packet is buffered.
	Accepted Verdict = iota
	// Duplicate: a packet with this sequence number was already received;
	// it is dropped.
	Duplicate
	// Late: the packet's playout time has passed (it was concealed); it is
	// dropped.
	Late
	// Resynced: the packet could not continue the stream (a sequence or
	// timestamp jump no network produces, as after a sender restart); the
	// buffer was flushed and restarted with it.
	Resynced
)

// Action tells the consumer what to produce for the next Slot.
type Action uint8

// The actions of Pop.
const (
	// Silence: nothing to play (before the first talkspurt, or some time
	// after the last one ended): produce Samples of silence.
	Silence Action = iota
	// Play: decode Payload.
	Play
	// Conceal: audio is missing: synthesize Samples with the codec's loss
	// concealment (from Next by FEC when Next is set).
	Conceal
	// Comfort: continue the comfort noise of the last CN packet played.
	Comfort
)

// String returns the action's name.
func (a Action) String() string {
	switch a {
	case Silence:
		return "silence"
	case Play:
		return "play"
	case Conceal:
		return "conceal"
	case Comfort:
		return "comfort"
	}
	return fmt.Sprintf("Action(%d)", uint8(a))
}

// Slot is one decision of Pop: what the next Samples of audio are.
type Slot struct {
	Action Action
	// Samples is the duration to produce, in clock units.
	Samples int
	// Seq, Timestamp, Marker and CN describe the packet played (Play).
	Seq       uint16
	Timestamp uint32
	Marker    bool
	CN        bool
	// Payload is the packet to decode (Play). It is owned by the Buffer
	// and valid until the next Pop; Push does not touch it.
	Payload []byte
	// Next, for a Conceal of a single lost packet, is the packet that
	// followed it, whose in-band FEC may rebuild it (Opus). Nil otherwise.
	// Valid until the next Pop.
	Next []byte
}

// Config tunes a Buffer. Zero values mean the defaults.
type Config struct {
	// ClockRate is the RTP clock rate in Hz (8000 for G.711, 48000 for
	// Opus). Required.
	ClockRate int
	// MinDelay and MaxDelay bound the adaptive target delay; 0 means 20
	// and 80 ms.
	MinDelay, MaxDelay time.Duration
	// Capacity is the number of packets held; 0 means 64 (1.28 s of 20 ms
	// packets). Older packets are dropped (Overflow) to make room.
	Capacity int
	// DropInterval is the shortest time between two packets dropped to
	// reduce the delay during continuous speech; 0 means 500 ms.
	DropInterval time.Duration
}

func (c Config) withDefaults() (Config, error) {
	if c.ClockRate <= 0 || c.ClockRate > 192000 {
		return c, fmt.Errorf("clock rate %d Hz: %w", c.ClockRate, ErrBadConfig)
	}
	if c.MinDelay == 0 {
		c.MinDelay = 20 * time.Millisecond
	}
	if c.MaxDelay == 0 {
		c.MaxDelay = 80 * time.Millisecond
	}
	if c.Capacity == 0 {
		c.Capacity = 64
	}
	if c.DropInterval == 0 {
		c.DropInterval = 500 * time.Millisecond
	}
	switch {
	case c.MinDelay < 0 || c.MaxDelay < c.MinDelay:
		return c, fmt.Errorf("delay bounds %v..%v: %w", c.MinDelay, c.MaxDelay, ErrBadConfig)
	case c.Capacity < 8 || c.Capacity > 4096:
		return c, fmt.Errorf("capacity %d packets (8..4096): %w", c.Capacity, ErrBadConfig)
	case c.DropInterval < 0:
		return c, fmt.Errorf("drop interval %v: %w", c.DropInterval, ErrBadConfig)
	}
	return c, nil
}

// Stats counts what a Buffer did. Conceal slots are split into Concealed
// (a sequence gap: a packet is known missing), Underruns (the buffer ran
// dry past the target delay: a loss, or the sender went quiet) and
// Stretched (concealment inserted to grow the delay while the packet may
// still come).
type Stats struct {
	Pushed     uint64 // packets given to Push
	Played     uint64 // packets played
	Concealed  uint64 // slots concealed for a sequence gap
	Underruns  uint64 // slots concealed because the buffer was empty
	Stretched  uint64 // slots concealed to grow the delay
	Late       uint64 // packets dropped for arriving after their playout time
	Duplicates uint64 // packets dropped as duplicates
	Dropped    uint64 // packets dropped to shrink the delay
	Overflow   uint64 // packets dropped because the buffer was full
	Resyncs    uint64 // restarts on a stream discontinuity
	// Target is the current target delay; Delay is the delay of the last
	// packet played, measured from the fastest arrival seen.
	Target, Delay time.Duration
	// Buffered is the total time played packets spent in the buffer
	// (from arrival to Pop); Buffered/Played is the mean added delay.
	Buffered time.Duration
}

type mode uint8

const (
	modeWait    mode = iota // not playing: anchor on the next packet at the target delay
	modePlaying             // playing packet after packet
	modeComfort             // a CN packet was played: comfort noise until the next packet
)

const (
	window      = 100                  // transit samples kept: 2 s of 20 ms packets
	targetEvery = 10                   // pushes between two target computations
	margin      = 5 * time.Millisecond // added to the measured spread
	hysteresis  = 2 * time.Millisecond // above target+frame before dropping
	fadeFrames  = 5                    // conceal slots after speech stops before silence
	maxSeqJump  = 3000                 // sequence jump taken as a sender restart
	startSlack  = 8                    // packets before the first one accepted while starting
)

type entry struct {
	ext     int64 // extended sequence number; -1 for never used
	has     bool  // holds a packet not yet consumed
	ts      int64 // extended timestamp
	samples int
	marker  bool
	cn      bool
	arrival int64 // ns since base
	payload []byte
}

// Buffer is the adaptive jitter buffer described in the package
// documentation. It belongs to one stream (one SSRC); it is not safe for
// concurrent use.
type Buffer struct {
	cfg   Config
	frame int // clock units in 20 ms
	slots []entry

	started bool
	base    time.Time
	baseTS  int64
	highSeq int64
	highTS  int64

	mode     mode
	lastSeq  int64 // last sequence number consumed (played, concealed or dropped)
	playTS   int64 // timestamp of the next audio to produce
	lastDur  int   // duration of the last packet played
	fade     int   // conceal slots left before idle output turns to silence
	lastDrop int64 // ns since base of the last delay-reducing drop

	winN     int
	winPos   int
	dMin     int64
	target   int64 // ns
	pushesTg int

	out  []byte
	next []byte
	st   Stats

	// The windows last: what a Push or Pop touches above is a few
	// neighbouring cache lines, not lines on both sides of 1.6 KB.
	win     [window]int64 // relative transit times, ns
	scratch [window]int64
}

// New returns an empty Buffer.
func New(cfg Config) (*Buffer, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	b := &Buffer{
		cfg:   cfg,
		frame: cfg.ClockRate / 50,
		slots: make([]entry, cfg.Capacity),
	}
	b.Reset()
	return b, nil
}

// Reset forgets every packet and measurement, as for a new stream (a new
// SSRC). Counters are kept.
func (b *Buffer) Reset() {
	for i := range b.slots {
		b.slots[i].ext = -1
		b.slots[i].has = false
	}
	b.started = false
	b.mode = modeWait
	b.fade = 0
	b.lastDur = b.frame
	b.winN, b.winPos = 0, 0
	b.target = int64(b.cfg.MinDelay)
	b.pushesTg = 0
}

// Stats returns the counters and the current delays.
func (b *Buffer) Stats() Stats {
	s := b.st
	s.Target = time.Duration(b.target)
	return s
}

// ClockRate returns the RTP clock rate the Buffer was made for.
func (b *Buffer) ClockRate() int {
	return b.cfg.ClockRate
}

// tsDur converts a timestamp difference in clock units to nanoseconds
// without overflowing for any call length.
func (b *Buffer) tsDur(d int64) int64 {
	r := int64(b.cfg.ClockRate)
	return d/r*int64(time.Second) + d%r*int64(time.Second)/r
}

func (b *Buffer) slot(ext int64) *entry {
	return &b.slots[int(ext%int64(len(b.slots)))]
}

func (b *Buffer) start(p Packet, at time.Time) {
	b.started = true
	b.base = at
	b.highSeq = int64(p.Seq) + 1<<20
	b.highTS = int64(p.Timestamp) + 1<<34
	b.baseTS = b.highTS
	b.lastSeq = b.highSeq - startSlack
	b.dMin = 0
	b.mode = modeWait
}

// Push adds a packet that arrived at at.
func (b *Buffer) Push(p Packet, at time.Time) Verdict {
	b.st.Pushed++
	verdict := Accepted
	if !b.started {
		b.start(p, at)
	}
	ext := b.highSeq + int64(int16(p.Seq-uint16(b.highSeq)))
	extTS := b.highTS + int64(int32(p.Timestamp-uint32(b.highTS)))
	seqDelta, tsDelta := ext-b.highSeq, extTS-b.highTS
	if seqDelta > maxSeqJump || seqDelta < -maxSeqJump || (seqDelta > 0 && tsDelta < -int64(b.cfg.ClockRate)) {
		b.Reset()
		b.start(p, at)
		b.st.Resyncs++
		ext, extTS = b.highSeq, b.highTS
		verdict = Resynced
	}
	arrival := int64(at.Sub(b.base))
	s := b.slot(ext)
	if s.ext == ext && (s.has || ext <= b.lastSeq) {
		b.st.Duplicates++
		return Duplicate
	}
	b.observe(arrival - b.tsDur(extTS-b.baseTS))
	if ext <= b.lastSeq {
		b.st.Late++
		return Late
	}
	for ext >= b.lastSeq+int64(len(b.slots)) {
		// Full: drop the oldest to make room, and re-anchor afterwards.
		b.lastSeq++
		if o := b.slot(b.lastSeq); o.has && o.ext == b.lastSeq {
			o.has = false
			b.st.Overflow++
		}
		b.mode = modeWait
	}
	samples := p.Samples
	if samples <= 0 {
		samples = b.lastDur
	}
	*s = entry{
		ext:     ext,
		has:     true,
		ts:      extTS,
		samples: samples,
		marker:  p.Marker,
		cn:      p.CN,
		arrival: arrival,
		payload: append(s.payload[:0], p.Payload...),
	}
	if ext > b.highSeq {
		b.highSeq, b.highTS = ext, extTS
	}
	return verdict
}

// observe records one relative transit time.
func (b *Buffer) observe(d int64) {
	if b.winN == 0 || d < b.dMin {
		b.dMin = d
	}
	b.win[b.winPos] = d
	b.winPos = (b.winPos + 1) % window
	b.winN = min(b.winN+1, window)
	b.pushesTg++
}

// updateTarget recomputes the fastest transit and the target delay from
// the window: the 98th percentile of the spread above the minimum, plus a
// margin for the consumer's own clock noise.
func (b *Buffer) updateTarget() {
	if b.pushesTg < targetEvery || b.winN == 0 {
		return
	}
	b.pushesTg = 0
	s := b.scratch[:b.winN]
	copy(s, b.win[:b.winN])
	lo := s[0]
	for _, v := range s {
		lo = min(lo, v)
	}
	b.dMin = lo
	k := (len(s)*98 + 99) / 100
	p98 := selectK(s, k-1)
	t := time.Duration(p98-lo) + margin
	b.target = int64(min(max(t, b.cfg.MinDelay), b.cfg.MaxDelay))
}

// selectK returns the k-th smallest element of s (0-based), reordering s.
func selectK(s []int64, k int) int64 {
	lo, hi := 0, len(s)-1
	for lo < hi {
		pivot := s[(lo+hi)/2]
		i, j := lo, hi
		for i <= j {
			for s[i] < pivot {
				i++
			}
			for s[j] > pivot {
				j--
			}
			if i <= j {
				s[i], s[j] = s[j], s[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return s[k]
		}
	}
	return s[k]
}

// delay is how long after its fastest possible arrival audio at timestamp
// ts plays if it plays at t.
func (b *Buffer) delay(t, ts int64) int64 {
	return t - b.tsDur(ts-b.baseTS) - b.dMin
}

// peek returns the earliest buffered packet after lastSeq, or nil.
func (b *Buffer) peek() *entry {
	for ext := b.lastSeq + 1; ext <= b.highSeq && ext < b.lastSeq+int64(len(b.slots)); ext++ {
		if s := b.slot(ext); s.has && s.ext == ext {
			return s
		}
	}
	return nil
}

// Pop decides the next audio at consumer time now. Call it whenever the
// consumer needs audio, typically once per 20 ms frame.
func (b *Buffer) Pop(now time.Time) Slot {
	if !b.started {
		return Slot{Action: Silence, Samples: b.frame}
	}
	t := int64(now.Sub(b.base))
	b.updateTarget()
	if b.mode == modePlaying {
		// Packets wholly before the playout point came too late.
		for n := b.peek(); n != nil && n.ts+int64(n.samples) <= b.playTS; n = b.peek() {
			n.has = false
			b.lastSeq = n.ext
			b.st.Late++
		}
	}
	n := b.peek()
	if b.mode == modePlaying {
		switch {
		case n == nil:
			return b.underrun(t)
		case n.ts <= b.playTS:
			return b.play(n, t)
		case n.ext == b.lastSeq+1:
			// Time jumped with no packet missing: the sender was silent
			// (silence suppression, DTX) or moved its clock. A new
			// talkspurt starts: re-anchor on it.
			b.mode = modeWait
			b.fade = fadeFrames
		default:
			return b.lost(n, t)
		}
	}
	if n == nil || b.delay(t, n.ts) < b.target {
		return b.idle()
	}
	// Anchor: play n now. Packets that have waited far past the target
	// (a burst after an outage) are skipped so the talkspurt starts at the
	// target delay.
	for {
		nn := b.slot(n.ext + 1)
		if !nn.has || nn.ext != n.ext+1 || b.delay(t, nn.ts) < b.target {
			break
		}
		n.has = false
		b.lastSeq = n.ext
		b.st.Dropped++
		n = nn
	}
	b.mode = modePlaying
	b.playTS = n.ts
	return b.play(n, t)
}

// play consumes n, first dropping it in favour of its successor when the
// delay is a frame above target.
func (b *Buffer) play(n *entry, t int64) Slot {
	// A frame or a packet, whichever is longer: the consumer pulls packets
	// when its frame needs them, so the delay seen here wobbles by that.
	excess := b.delay(t, n.ts) - b.target
	step := b.tsDur(int64(max(b.frame, n.samples)))
	if excess > step+int64(hysteresis) && t-b.lastDrop >= int64(b.cfg.DropInterval) {
		if nn := b.slot(n.ext + 1); nn.has && nn.ext == n.ext+1 && nn.ts == n.ts+int64(n.samples) && !n.cn {
			n.has = false
			b.lastSeq = n.ext
			b.lastDrop = t
			b.st.Dropped++
			n = nn
		}
	}
	n.has = false
	b.lastSeq = n.ext
	b.playTS = n.ts + int64(n.samples)
	b.lastDur = n.samples
	b.fade = fadeFrames
	b.st.Played++
	b.st.Delay = time.Duration(b.delay(t, n.ts))
	b.st.Buffered += time.Duration(t - n.arrival)
	// The slot's payload becomes the Slot's and the previous Slot's buffer
	// goes to the slot for its next packet: a swap, not a copy, and the
	// payload stays where Push put it, already in the cache.
	b.out, n.payload = n.payload, b.out[:0]
	if n.cn {
		b.mode = modeComfort
	}
	return Slot{
		Action:    Play,
		Samples:   n.samples,
		Seq:       uint16(n.ext),
		Timestamp: uint32(n.ts),
		Marker:    n.marker,
		CN:        n.cn,
		Payload:   b.out,
	}
}

// lost handles a sequence gap before n while playing.
func (b *Buffer) lost(n *entry, t int64) Slot {
	if b.delay(t, b.playTS) < b.target {
		// Below target: the packet may still come; wait a frame.
		b.st.Stretched++
		return Slot{Action: Conceal, Samples: b.lastDur}
	}
	dur := int64(b.lastDur)
	if gap := n.ts - b.playTS; gap < dur {
		dur = gap
	}
	b.lastSeq++
	b.playTS += dur
	b.st.Concealed++
	s := Slot{Action: Conceal, Samples: int(dur)}
	if n.ext == b.lastSeq+1 && n.ts == b.playTS {
		b.next = append(b.next[:0], n.payload...)
		s.Next = b.next
	}
	return s
}

// underrun handles an empty buffer while playing.
func (b *Buffer) underrun(t int64) Slot {
	if b.delay(t, b.playTS) < b.target {
		b.st.Stretched++
		return Slot{Action: Conceal, Samples: b.lastDur}
	}
	// Past its time: the packet is lost or the sender went quiet. Keep the
	// clock going; after a few frames treat it as the end of a talkspurt.
	b.playTS += int64(b.lastDur)
	b.st.Underruns++
	if b.fade--; b.fade <= 0 {
		b.mode = modeWait
	}
	return Slot{Action: Conceal, Samples: b.lastDur}
}

// idle is the output while waiting for a talkspurt.
func (b *Buffer) idle() Slot {
	switch {
	case b.mode == modeComfort:
		return Slot{Action: Comfort, Samples: b.frame}
	case b.fade > 0:
		b.fade--
		return Slot{Action: Conceal, Samples: b.frame}
	}
	return Slot{Action: Silence, Samples: b.frame}
}
