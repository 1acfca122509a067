package hugepage

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Mode reads the system's transparent huge page setting: "always",
// "madvise" or "never" (the bracketed word of
// /sys/kernel/mm/transparent_hugepage/enabled), or "" where the kernel has
// none.
func Mode() string {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		return ""
	}
	i, j := bytes.IndexByte(b, '['), bytes.IndexByte(b, ']')
	if i < 0 || j < i {
		return ""
	}
	return string(b[i+1 : j])
}

// heapArena is the Go runtime's heap arena on 64-bit Linux: the heap is
// reserved, and grows, in aligned blocks of this size.
const heapArenaBytes = 64 << 20

// Heap advises the Go heap for huge pages: it finds the heap's mappings
// in /proc/self/maps (the run of adjacent anonymous mappings around the
// arena that holds a fresh heap object, trimmed to whole arenas) and asks
// for huge pages over each writable one not advised before. The runtime
// maps the heap a few megabytes at a time as it grows, each a new mapping
// without the advice, so a node calls it again from time to time (Keep).
// The first call also collapses what is already populated into huge
// pages (MADV_COLLAPSE, Linux 6.1; older kernels leave that to
// khugepaged); later ones leave it to khugepaged, since a synchronous
// collapse while calls run stalls every thread that touches those pages,
// the kernel's sends of held RTP packets among them (50 simulated calls:
// a worker's packets 3-6 ms late every 2 s; docs/decisions.md). It
// returns the bytes newly advised.
func (a *Advisor) Heap() (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	collapse := !a.started
	a.started = true
	a.probe = new([64]byte) // kept in a, so that it is on the heap
	p := uintptr(unsafe.Pointer(a.probe))
	maps, err := readMaps()
	if err != nil {
		return 0, err
	}
	i := -1
	for k, m := range maps {
		if m.start <= p && p < m.end {
			i = k
			break
		}
	}
	if i < 0 {
		return 0, fmt.Errorf("hugepage: heap object at %#x is in no mapping", p)
	}
	lo, hi := i, i
	for lo > 0 && maps[lo-1].end == maps[lo].start && maps[lo-1].anon {
		lo--
	}
	for hi+1 < len(maps) && maps[hi+1].start == maps[hi].end && maps[hi+1].anon {
		hi++
	}
	from := (maps[lo].start + heapArenaBytes - 1) &^ (heapArenaBytes - 1)
	to := maps[hi].end &^ (heapArenaBytes - 1)
	advised := 0
	for _, m := range maps[lo : hi+1] {
		if !m.writable {
			continue
		}
		s, e := max(m.start, from), min(m.end, to)
		// Only whole huge pages: the advice on a part would split the
		// mapping for nothing.
		s, e = (s+Size-1)&^(Size-1), e&^(Size-1)
		if e <= s || a.covered(s, e) {
			continue
		}
		if err := madvise(s, e-s, unix.MADV_HUGEPAGE); err != nil {
			return advised, fmt.Errorf("hugepage: madvise %#x-%#x: %w", s, e, err)
		}
		// Best effort: EINVAL before Linux 6.1, EAGAIN when no huge page
		// is free right now; khugepaged does it later then.
		if collapse {
			_ = madvise(s, e-s, unix.MADV_COLLAPSE)
		}
		a.add(s, e)
		advised += int(e - s)
	}
	return advised, nil
}

// madvise is madvise(2) on memory the program did not map itself (the
// runtime's), known by address.
func madvise(addr, n uintptr, advice int) error {
	if _, _, e := unix.Syscall(unix.SYS_MADVISE, addr, n, uintptr(advice)); e != 0 {
		return e
	}
	return nil
}

// Advisor remembers which heap ranges it advised, so that each is advised
// (and collapsed) once.
type Advisor struct {
	mu    sync.Mutex
	done  [][2]uintptr // advised ranges, disjoint
	probe *[64]byte    // Heap's heap object, whose mapping it looks for
	// started: Heap ran before, so it collapses nothing more.
	started bool
}

func (a *Advisor) covered(s, e uintptr) bool {
	for _, r := range a.done {
		if r[0] <= s && e <= r[1] {
			return true
		}
	}
	return false
}

// add records [s, e), merging it with the ranges it touches.
func (a *Advisor) add(s, e uintptr) {
	out := a.done[:0]
	for _, r := range a.done {
		if r[1] < s || e < r[0] {
			out = append(out, r)
			continue
		}
		s, e = min(s, r[0]), max(e, r[1])
	}
	a.done = append(out, [2]uintptr{s, e})
}

// Keep advises the heap now and every period until ctx ends or stop is
// called, reporting each pass's error (the first of a run of the same) to
// fail. stop ends the advising goroutine and waits for it. Keep returns
// ErrUnsupported at once where the system never gives huge pages.
func Keep(ctx context.Context, period time.Duration, fail func(error)) (stop func(), err error) {
	switch Mode() {
	case "madvise", "always":
	default:
		return nil, ErrUnsupported
	}
	a := new(Advisor)
	var last error
	pass := func() {
		_, err := a.Heap()
		if err != nil && fail != nil && (last == nil || err.Error() != last.Error()) {
			fail(err)
		}
		last = err
	}
	pass()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				pass()
			}
		}
	}()
	return func() { cancel(); <-done }, nil
}

// Advised reports whether the mapping that holds p asks for huge pages
// (its VmFlags in /proc/self/smaps include hg), and how many bytes of it
// are on huge pages now.
func Advised(p unsafe.Pointer) (advised bool, huge int, err error) {
	addr := uintptr(p)
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return false, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in, found := false, false
	for sc.Scan() {
		l := sc.Bytes()
		if m, ok := parseMapsLine(l); ok {
			if in {
				break
			}
			in = m.start <= addr && addr < m.end
			found = found || in
			continue
		}
		if !in {
			continue
		}
		if v, ok := bytes.CutPrefix(l, []byte("VmFlags:")); ok {
			advised = bytes.Contains(append(v, ' '), []byte(" hg "))
		}
		if v, ok := bytes.CutPrefix(l, []byte("AnonHugePages:")); ok {
			kb, err := strconv.Atoi(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(v), []byte("kB")))))
			if err != nil {
				return false, 0, fmt.Errorf("hugepage: smaps: %q: %w", l, err)
			}
			huge = kb << 10
		}
	}
	if err := sc.Err(); err != nil {
		return false, 0, err
	}
	if !found {
		return false, 0, fmt.Errorf("hugepage: no mapping holds %#x", addr)
	}
	return advised, huge, nil
}

// mapping is one line of /proc/self/maps.
type mapping struct {
	start, end uintptr
	writable   bool
	anon       bool // no file; the runtime's (unnamed, or named "[anon:...]")
}

func readMaps() ([]mapping, error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m, ok := parseMapsLine(sc.Bytes())
		if ok {
			out = append(out, m)
		}
	}
	return out, sc.Err()
}

// parseMapsLine parses "start-end perms offset dev inode [path]".
func parseMapsLine(l []byte) (mapping, bool) {
	f := bytes.Fields(l)
	if len(f) < 5 {
		return mapping{}, false
	}
	dash := bytes.IndexByte(f[0], '-')
	if dash < 0 {
		return mapping{}, false
	}
	s, err1 := strconv.ParseUint(string(f[0][:dash]), 16, 64)
	e, err2 := strconv.ParseUint(string(f[0][dash+1:]), 16, 64)
	if err1 != nil || err2 != nil || e <= s || len(f[1]) < 4 {
		return mapping{}, false
	}
	m := mapping{start: uintptr(s), end: uintptr(e), writable: f[1][1] == 'w' && f[1][3] == 'p'}
	m.anon = string(f[4]) == "0" && (len(f) == 5 || bytes.HasPrefix(f[5], []byte("[anon:")))
	return m, true
}
