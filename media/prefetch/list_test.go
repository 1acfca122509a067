package prefetch

import (
	"testing"
	"unsafe"
)

func TestListAddSpanCoversEveryLine(t *testing.T) {
	var l List
	// 10 bytes across a line boundary name both lines.
	l.AddSpan(60, 10)
	if l.n != 2 || l.a[0] != 0 || l.a[1] != 64 {
		t.Fatalf("AddSpan(60, 10) = %v, want lines 0 and 64", l.a[:l.n])
	}
	l.Reset()
	l.AddSpan(128, 64)
	if l.n != 1 || l.a[0] != 128 {
		t.Fatalf("AddSpan(128, 64) = %v, want line 128", l.a[:l.n])
	}
	l.Reset()
	l.AddSpan(0, 100)
	l.AddSpan(64, 0)
	l.AddSpan(64, -5)
	if l.n != 0 {
		t.Fatalf("nil address or empty span added %v", l.a[:l.n])
	}
}

func TestListDropsBeyondCap(t *testing.T) {
	var l List
	for i := range ListCap + 10 {
		l.Add(uintptr(64 * (i + 1)))
	}
	l.AddSpan(1<<20, 1<<12)
	if l.n != ListCap {
		t.Fatalf("n = %d, want %d", l.n, ListCap)
	}
	if l.a[ListCap-1] != uintptr(64*ListCap) {
		t.Fatalf("last = %d, want the first ListCap added", l.a[ListCap-1])
	}
	l.Add(0)
	l.Fetch() // any address is safe to fetch, and the list keeps its addresses
	if l.n != ListCap {
		t.Fatalf("Fetch changed the list")
	}
}

func TestFetchArbitraryAddresses(t *testing.T) {
	// A prefetch never faults: unmapped, kernel and stale addresses alike.
	var l List
	x := new([256]byte)
	l.AddSpan(Addr(x), len(x))
	l.Add(8)
	l.Add(^uintptr(0) &^ 63)
	l.Add(Addr(x) + 1<<30)
	l.Fetch()
	Lines4(0, 1, 2, 3)
	Line(0)
	Range(Addr(x), Addr(x)+uintptr(len(x)))
	Range(8, 8+1000)
}

func TestAddr(t *testing.T) {
	s := []int64{1, 2, 3}
	if SliceAddr(s) != uintptr(unsafe.Pointer(&s[0])) || SliceAddr(s[:0]) != 0 || SliceAddr[int64](nil) != 0 {
		t.Fatal("SliceAddr")
	}
	v := 7
	if Addr(&v) != uintptr(unsafe.Pointer(&v)) {
		t.Fatal("Addr")
	}
}

func BenchmarkFetch32(b *testing.B) {
	var l List
	x := make([]byte, 32*64)
	l.AddSpan(SliceAddr(x), len(x))
	for b.Loop() {
		l.Fetch()
	}
}
