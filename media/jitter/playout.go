package jitter

import (
	"fmt"
	"time"
)

// maxSlot caps one slot's audio: a packet claiming more than 120 ms (the
// longest Opus packet; 960 bytes of G.711) is cut to it.
const maxSlot = 120 * time.Millisecond

// PlayoutStats counts what a Playout produced, in 20 ms frames and in
// slots. A frame counts as Concealed if any of its audio was concealed.
type PlayoutStats struct {
	Frames       uint64 // frames produced
	Concealed    uint64 // frames holding concealed audio
	Comfort      uint64 // frames holding comfort noise
	Silent       uint64 // frames of silence (nothing received yet, or idle)
	DecodeErrors uint64 // packets the codec refused (concealed instead)
}

// Playout turns a Buffer into exactly one frame per ReadFrame at the
// decoder's rate. It belongs to one stream.
type Playout struct {
	buf   *Buffer
	dec   Decoder
	cng   *CNG
	rate  int
	frame int
	pcm   []int16 // decoded audio not yet returned: pcm[:n]
	n     int
	st    PlayoutStats
}

// NewPlayout returns a Playout reading buf and decoding with dec.
func NewPlayout(buf *Buffer, dec Decoder) (*Playout, error) {
	rate := dec.Rate()
	if rate <= 0 || rate%50 != 0 {
		return nil, fmt.Errorf("decoder rate %d Hz: %w", rate, ErrBadConfig)
	}
	frame := rate / 50
	slot := int(int64(rate) * int64(maxSlot) / int64(time.Second))
	return &Playout{
		buf:   buf,
		dec:   dec,
		cng:   NewCNG(),
		rate:  rate,
		frame: frame,
		pcm:   make([]int16, frame+slot),
	}, nil
}

// Buffer returns the Buffer the Playout reads.
func (p *Playout) Buffer() *Buffer { return p.buf }

// Rate returns the output rate.
func (p *Playout) Rate() int { return p.rate }

// Stats returns the frame counters.
func (p *Playout) Stats() PlayoutStats { return p.st }

// ReadFrame writes the next 20 ms of audio (Rate()/50 samples) into dst at
// consumer time now and returns the action that dominated the frame:
// Conceal if any of it was concealed, else Comfort, Silence or Play.
func (p *Playout) ReadFrame(now time.Time, dst []int16) (Action, error) {
	if len(dst) < p.frame {
		return Silence, fmt.Errorf("%d < %d samples: %w", len(dst), p.frame, ErrShortBuffer)
	}
	dst = dst[:p.frame]
	kind := Play
	seen := false
	for p.n < p.frame {
		s := p.buf.Pop(now)
		want := int(int64(s.Samples) * int64(p.rate) / int64(p.buf.ClockRate()))
		if p.n == 0 && want == p.frame && s.Action == Play && !s.CN {
			// The common case, a packet of exactly one frame: it is
			// decoded straight into dst, not through p.pcm. A packet
			// that decodes to another length carries on through p.pcm;
			// one the codec refuses there (longer than dst) is decoded
			// below, into p.pcm's room.
			if n, err := p.dec.Decode(dst, s.Payload); err == nil && n > 0 {
				if n == p.frame {
					return p.count(Play), nil
				}
				p.n = copy(p.pcm, dst[:n])
				seen = true
				continue
			}
		}
		want = min(max(want, 0), len(p.pcm)-p.n)
		if want == 0 {
			want = min(p.frame, len(p.pcm)-p.n)
		}
		got, k := p.fill(p.pcm[p.n:], s, want)
		kind, seen = merge(kind, k, seen), true
		p.n += got
	}
	copy(dst, p.pcm[:p.frame])
	p.n = copy(p.pcm, p.pcm[p.frame:p.n])
	return p.count(kind), nil
}

// fill produces the audio of slot s into out (want samples of it, except
// a decoded packet, which is as long as it is) and returns how many
// samples it wrote and what they are.
func (p *Playout) fill(out []int16, s Slot, want int) (int, Action) {
	switch s.Action {
	case Play:
		if s.CN {
			p.cng.Update(s.Payload)
			p.cng.Generate(out[:want])
			return want, Comfort
		}
		n, err := p.dec.Decode(out, s.Payload)
		if err == nil && n > 0 {
			return n, Play
		}
		p.st.DecodeErrors++
		return p.conceal(out[:want], nil), Conceal
	case Conceal:
		return p.conceal(out[:want], s.Next), Conceal
	case Comfort:
		p.cng.Generate(out[:want])
		return want, Comfort
	}
	clear(out[:want])
	return want, Silence
}

// merge folds the kind of a slot's audio into the frame's: the worse of
// the two, except that silence counts only as a frame's first slot.
func merge(kind, k Action, seen bool) Action {
	if k == Silence {
		if !seen {
			return Silence
		}
		return kind
	}
	return worse(kind, k)
}

// count adds a frame of the given kind to the counters and returns kind.
func (p *Playout) count(kind Action) Action {
	p.st.Frames++
	switch kind {
	case Conceal:
		p.st.Concealed++
	case Comfort:
		p.st.Comfort++
	case Silence:
		p.st.Silent++
	}
	return kind
}

// conceal asks the decoder for len(dst) samples of concealment and falls
// back to silence if it cannot (a length Opus does not take).
func (p *Playout) conceal(dst []int16, next []byte) int {
	if err := p.dec.Conceal(dst, next); err != nil {
		clear(dst)
	}
	return len(dst)
}

// worse orders frame kinds by how much they differ from received audio.
func worse(a, b Action) Action {
	rank := func(x Action) int {
		switch x {
		case Conceal:
			return 3
		case Comfort:
			return 2
		case Silence:
			return 1
		}
		return 0
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}
