package jitter

import (
	"unsafe"

	"github.com/voiced/voiced/media/prefetch"
)

// AddHot adds to l what the stream's next Push and ReadFrame will touch
// (media/prefetch): the Playout, its Buffer's and decoder's fields, the
// slots the next packet and the next frame use, and where the concealer's
// history takes the next frame. Call it after the tick's ReadFrame, on
// the goroutine that pushes and reads.
func (p *Playout) AddHot(l *prefetch.List) {
	if !prefetch.Enabled {
		return
	}
	l.AddSpan(prefetch.Addr(p), int(unsafe.Sizeof(*p)))
	b := p.buf
	l.AddSpan(prefetch.Addr(b), int(unsafe.Offsetof(b.win)))
	l.Add(prefetch.Addr(&b.win[b.winPos]))
	if n := uint64(len(b.slots)); n > 0 {
		l.AddSpan(prefetch.Addr(&b.slots[uint64(b.highSeq+1)%n]), int(unsafe.Sizeof(entry{})))
		l.AddSpan(prefetch.Addr(&b.slots[uint64(b.lastSeq+1)%n]), int(unsafe.Sizeof(entry{})))
	}
	if g, ok := p.dec.(*G711); ok {
		g.addHot(l, p.frame)
	}
}

// addHot adds the decoder, its concealer inline, and where the
// concealer's history takes the next frame of n samples.
func (g *G711) addHot(l *prefetch.List, n int) {
	l.AddSpan(prefetch.Addr(g), int(unsafe.Sizeof(*g)))
	g.plc.addHot(l, n)
}

// addHot adds where the history takes the next frame of n samples (the
// concealer's own fields are its holder's to add).
func (p *PLC) addHot(l *prefetch.List, n int) {
	if at := p.histOff + len(p.hist); at < len(p.histBuf) {
		l.AddSpan(prefetch.Addr(&p.histBuf[at]), 2*min(len(p.histBuf)-at, n))
	}
}
