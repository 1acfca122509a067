package rtp

import (
	"encoding/binary"
	"time"
)

// RFC 4733 section 2.3 event payload: event code, E(nd) and R bits with a
// 6-bit volume, and a 16-bit duration in timestamp units.
const (
	eventEnd     = 0x80
	eventVolume  = 0x3f
	dtmfStale    = 250 * time.Millisecond // no update for this long ends a digit whose end was lost
	dtmfVolume   = 10                     // -dBm0 we send at
	dtmfEnds     = 3                      // end packets sent (RFC 4733 section 2.5.1.4)
	dtmfGapTicks = 3                      // 60 ms of audio between two digits we send
	dtmfQueue    = 32                     // digits SendDTMF may queue
)

func putEvent(b []byte, event byte, end bool, volume byte, duration uint16) {
	b[0] = event
	b[1] = volume & eventVolume
	if end {
		b[1] |= eventEnd
	}
	binary.BigEndian.PutUint16(b[2:], duration)
}

// dtmfRx turns telephone-event packets into one Digit per key press. An
// event is identified by its RTP timestamp (all packets of one event carry
// the timestamp of its start, RFC 4733 section 2.5.1.1), never by the
// marker bit, so it copes with a lost or missing marker and with a lost
// start packet (the first packet seen starts the event). The digit is
// reported at the first end packet and repeated ends are ignored; if every
// end packet is lost it is reported when the next event starts or when no
// update came for dtmfStale. Events only move forward in RTP time, so
// stragglers of an earlier event (reordered or repeated late) are ignored.
// It belongs to the receive goroutine.
type dtmfRx struct {
	active  bool   // an event is open
	done    bool   // the open event was reported
	ts      uint32 // its timestamp
	event   byte
	volume  byte
	dur     uint16
	lastAt  time.Time
	clock   int
	prevTS  uint32 // timestamp of the last event reported, to ignore its stragglers
	hasPrev bool
	ssrc    uint32 // the stream the timestamps belong to
}

// packet takes one telephone-event payload and calls emit for each digit
// that ends with it (at most two: a pending one whose end was lost, and
// this one if it is already an end).
func (d *dtmfRx) packet(ssrc, ts uint32, payload []byte, now time.Time, emit func(Digit)) {
	if len(payload) < 4 {
		return
	}
	if ssrc != d.ssrc {
		// A new stream: its timestamps start anywhere.
		if d.active && !d.done {
			d.report(emit)
		}
		d.active, d.hasPrev, d.ssrc = false, false, ssrc
	}
	ev, end := payload[0], payload[1]&eventEnd != 0
	vol, dur := payload[1]&eventVolume, binary.BigEndian.Uint16(payload[2:])
	if !d.active || ts != d.ts {
		if d.hasPrev && int32(ts-d.prevTS) <= 0 || d.active && int32(ts-d.ts) < 0 {
			return // a straggler of an event already reported or replaced
		}
		if d.active && !d.done {
			d.report(emit)
		}
		d.active, d.done = true, false
		d.ts, d.event, d.volume, d.dur = ts, ev, vol, 0
	}
	if d.done {
		return // a repeated end packet
	}
	d.lastAt = now
	d.dur = max(d.dur, dur)
	d.volume = vol
	if end {
		d.report(emit)
	}
}

// expire reports an open event that has had no update for dtmfStale.
func (d *dtmfRx) expire(now time.Time, emit func(Digit)) {
	if d.active && !d.done && now.Sub(d.lastAt) > dtmfStale {
		d.report(emit)
	}
}

func (d *dtmfRx) report(emit func(Digit)) {
	d.done = true
	d.prevTS, d.hasPrev = d.ts, true
	r, ok := eventDigit(d.event)
	if !ok || d.clock <= 0 {
		return
	}
	emit(Digit{
		Digit:    r,
		Duration: time.Duration(int64(d.dur) * int64(time.Second) / int64(d.clock)),
		Volume:   int(d.volume),
	})
}

// dtmfTx sends queued digits as RFC 4733 events, one packet per tick: a
// start packet with the marker bit, updates whose duration grows by a tick,
// and three end packets with the final duration. Audio is not sent during
// an event, but the audio timestamp keeps running, so the event's packets
// carry the timestamp the audio would have had at its start and audio
// resumes where the clock is. Pacer goroutine, under Session.txMu.
type dtmfTx struct {
	queue   [dtmfQueue]pendingDigit
	head, n int
	active  bool
	event   byte
	ts      uint32 // event timestamp
	elapsed int    // duration so far, in event clock units
	total   int    // requested duration, in event clock units
	ends    int    // end packets sent
	gap     int    // ticks of audio before the next digit may start
	step    int    // event clock units per tick
}

type pendingDigit struct {
	event    byte
	duration time.Duration
}

func (t *dtmfTx) push(event byte, d time.Duration) bool {
	if t.n == len(t.queue) {
		return false
	}
	t.queue[(t.head+t.n)%len(t.queue)] = pendingDigit{event, d}
	t.n++
	return true
}

// next decides the event packet for this tick. It returns ok false when no
// event is due (audio goes out instead); otherwise the payload fields and
// whether this is the event's first packet (marker bit).
func (t *dtmfTx) next(audioTS uint32, clock int) (ts uint32, ev byte, end bool, dur uint16, first, ok bool) {
	if !t.active {
		if t.gap > 0 {
			t.gap--
			return
		}
		if t.n == 0 {
			return
		}
		p := t.queue[t.head]
		t.head = (t.head + 1) % len(t.queue)
		t.n--
		t.step = clock / 50
		t.active, t.event, t.ts, t.elapsed, t.ends = true, p.event, audioTS, 0, 0
		t.total = max(int(int64(p.duration)*int64(clock)/int64(time.Second)), 2*t.step)
		first = true
	}
	ts, ev = t.ts, t.event
	if t.ends == 0 && t.elapsed+t.step < t.total {
		t.elapsed += t.step
		return ts, ev, false, uint16(min(t.elapsed, 0xffff)), first, true
	}
	t.elapsed = t.total
	t.ends++
	if t.ends == dtmfEnds {
		t.active = false
		t.gap = dtmfGapTicks
	}
	return ts, ev, true, uint16(min(t.total, 0xffff)), first, true
}

// flush forgets queued digits and the one being sent.
func (t *dtmfTx) flush() {
	t.n, t.active, t.gap = 0, false, 0
}
