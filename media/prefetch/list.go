package prefetch

import "unsafe"

// ListCap is how many addresses a List holds; Add drops the ones beyond.
const ListCap = 96

// List gathers the addresses a stream's next run will touch while its
// current run has them at hand (the objects it just used, the next slot
// of a ring), so that the run before the next one can fetch them all at
// once: the misses then overlap instead of waiting one pointer at a time.
// The addresses may go stale (an object replaced since): a stale one only
// fetches a useless line.
type List struct {
	n int
	a [ListCap]uintptr
}

// Reset empties l.
func (l *List) Reset() { l.n = 0 }

// Add appends address p (0 is skipped).
func (l *List) Add(p uintptr) {
	if p != 0 && l.n < ListCap {
		l.a[l.n] = p
		l.n++
	}
}

// AddSpan appends the lines of the n bytes at p (none for n <= 0).
func (l *List) AddSpan(p uintptr, n int) {
	if p == 0 {
		return
	}
	for q, end := p&^63, p+uintptr(max(n, 0)); q < end && l.n < ListCap; q += 64 {
		l.a[l.n] = q
		l.n++
	}
}

// Fetch prefetches every address of l. It does nothing unless Enabled.
func (l *List) Fetch() {
	if !Enabled {
		return
	}
	a := l.a[:l.n]
	for len(a) >= 4 {
		Lines4(a[0], a[1], a[2], a[3])
		a = a[4:]
	}
	for _, p := range a {
		Line(p)
	}
}

// Range prefetches the cache lines of the addresses [from, to). It does
// nothing unless Enabled.
func Range(from, to uintptr) {
	if !Enabled {
		return
	}
	from &^= 63
	for ; from+192 < to; from += 256 {
		Lines4(from, from+64, from+128, from+192)
	}
	for ; from < to; from += 64 {
		Line(from)
	}
}

// Addr is the address of p, for Add.
func Addr[T any](p *T) uintptr { return uintptr(unsafe.Pointer(p)) }

// SliceAddr is the address of s's first element, 0 for an empty slice.
func SliceAddr[T any](s []T) uintptr {
	if len(s) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(&s[0]))
}

// Addrs returns the addresses in l (the list's own memory: do not keep
// it past the next Add or Reset).
func (l *List) Addrs() []uintptr { return l.a[:l.n] }

// Has reports whether l names the line holding address p.
func (l *List) Has(p uintptr) bool {
	for _, a := range l.a[:l.n] {
		if a&^63 == p&^63 {
			return true
		}
	}
	return false
}
