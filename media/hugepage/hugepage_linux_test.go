package hugepage

import (
	"context"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// smapsOf is Advised, failing the test on an error.
func smapsOf(t *testing.T, p unsafe.Pointer) (advised bool, hugeKB int) {
	t.Helper()
	advised, huge, err := Advised(p)
	require.NoError(t, err)
	return advised, huge >> 10
}

// advisable: the system gives huge pages on request.
func advisable() bool { m := Mode(); return m == "madvise" || m == "always" }

// TestHeapAdvisesTheGoHeapOnceAndItsGrowth: Heap finds the arena of the
// Go heap, advises it, does not advise it twice, and advises what the
// runtime maps later.
func TestHeapAdvisesTheGoHeapOnceAndItsGrowth(t *testing.T) {
	if !advisable() {
		_, err := Keep(context.Background(), time.Second, nil)
		require.ErrorIs(t, err, ErrUnsupported)
		return
	}
	big := make([]byte, 48<<20)
	for i := 0; i < len(big); i += 4096 {
		big[i] = 1
	}
	a := new(Advisor)
	n, err := a.Heap()
	require.NoError(t, err)
	require.Positive(t, n)
	advised, huge := smapsOf(t, unsafe.Pointer(&big[len(big)/2]))
	require.True(t, advised, "the heap mapping that holds a live slice asks for huge pages")
	t.Logf("advised %d MB; the slice's mapping has %d MB on huge pages", n>>20, huge>>10)

	again, err := a.Heap()
	require.NoError(t, err)
	require.Zero(t, again, "nothing is advised twice")

	more := make([]byte, 200<<20) // the runtime maps more heap for it
	for i := 0; i < len(more); i += 4096 {
		more[i] = 1
	}
	grown, err := a.Heap()
	require.NoError(t, err)
	require.Positive(t, grown, "the heap mapped since is advised")
	advised, _ = smapsOf(t, unsafe.Pointer(&more[len(more)/2]))
	require.True(t, advised)
	_, _ = big[0], more[0]
}

func TestKeepRunsUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var errs []error
	defer cancel()
	stop, err := Keep(ctx, 10*time.Millisecond, func(err error) { errs = append(errs, err) })
	if !advisable() {
		require.ErrorIs(t, err, ErrUnsupported)
		return
	}
	require.NoError(t, err)
	time.Sleep(50 * time.Millisecond)
	stop() // the goroutine has ended: errs is ours to read
	require.Empty(t, errs)
}

func TestParseMapsLine(t *testing.T) {
	for _, tc := range []struct {
		line            string
		ok, write, anon bool
		start, end      uintptr
	}{
		{"2b3262400000-2b3263400000 rw-p 00000000 00:00 0 ", true, true, true, 0x2b3262400000, 0x2b3263400000},
		{"2b3263400000-2b3264000000 ---p 00000000 00:00 0", true, false, true, 0x2b3263400000, 0x2b3264000000},
		{"7ff3fd0ff000-7ff3fd140000 rw-s 00000000 00:0f 1057 anon_inode:[io_uring]", true, false, false, 0x7ff3fd0ff000, 0x7ff3fd140000},
		{"00400000-00403000 r--p 00000000 fe:01 123 /work/main/bin/voiced", true, false, false, 0x400000, 0x403000},
		{"2721a000-2723b000 rw-p 00000000 00:00 0 [heap]", true, true, false, 0x2721a000, 0x2723b000},
		{"7f0000000000-7f0000200000 rw-p 00000000 00:00 0 [anon:Go: heap]", true, true, true, 0x7f0000000000, 0x7f0000200000},
		{"garbage", false, false, false, 0, 0},
		{"5-3 rw-p 0 0 0", false, false, false, 0, 0},
	} {
		m, ok := parseMapsLine([]byte(tc.line))
		require.Equal(t, tc.ok, ok, tc.line)
		if !ok {
			continue
		}
		require.Equal(t, tc.start, m.start, tc.line)
		require.Equal(t, tc.end, m.end, tc.line)
		require.Equal(t, tc.write, m.writable, tc.line)
		require.Equal(t, tc.anon, m.anon, tc.line)
	}
}

func TestAdvisorMergesRanges(t *testing.T) {
	a := new(Advisor)
	a.add(0x200000, 0x400000)
	a.add(0x800000, 0xa00000)
	a.add(0x400000, 0x800000) // joins both
	require.Equal(t, [][2]uintptr{{0x200000, 0xa00000}}, a.done)
	require.True(t, a.covered(0x600000, 0x800000))
	require.False(t, a.covered(0x800000, 0xc00000))
}
