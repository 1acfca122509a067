package procstat

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseStat(t *testing.T) {
	line := "4242 (rtp engine) (x)) S 1 4242 4242 0 -1 4194560 1529 0 0 0 250 120 0 0 20 0 9 0 123 0 0\n"
	d, err := parseStat([]byte(line))
	require.NoError(t, err)
	require.Equal(t, 370*tick, d)
	_, err = parseStat([]byte("4242 rtpengine S 1"))
	require.ErrorIs(t, err, ErrFormat)
	_, err = parseStat([]byte("4242 (x) S 1 2 3"))
	require.ErrorIs(t, err, ErrFormat)
}

func TestParseSchedstat(t *testing.T) {
	require.Equal(t, 123456789*time.Nanosecond, parseSchedstat([]byte("123456789 5000 42\n")))
	require.Zero(t, parseSchedstat([]byte("")))
	require.Zero(t, parseSchedstat([]byte("x 1 2")))
}

func TestParseHost(t *testing.T) {
	stat := "cpu  100 0 50 800 50 0 0 0 7 0\ncpu0 60 0 30 400 10 0 0 0 0 0\ncpu1 40 0 20 400 40 0 0 0 0 0\nintr 1 2 3\n"
	h, err := parseHost([]byte(stat))
	require.NoError(t, err)
	require.Equal(t, uint64(1000), h.Total) // guest (7) is not counted twice
	require.Equal(t, uint64(150), h.Busy)
	require.Equal(t, []uint64{90, 60}, h.CoreBusy)

	later := Host{Busy: 250, Total: 1200, CoreBusy: []uint64{190, 60}, CoreTotal: []uint64{600, 600}}
	all, cores := Percent(h, later)
	require.InDelta(t, 50, all, 1e-9)
	require.InDelta(t, 100, cores[0], 1e-9)
	require.InDelta(t, 0, cores[1], 1e-9)

	// Steal (the eighth field) is busy time the hypervisor took.
	stat = "cpu  100 0 50 800 50 0 0 30 0 0\ncpu0 60 0 30 400 10 0 0 20 0 0\ncpu1 40 0 20 400 40 0 0 10 0 0\n"
	h, err = parseHost([]byte(stat))
	require.NoError(t, err)
	require.Equal(t, uint64(30), h.Steal)
	require.Equal(t, []uint64{20, 10}, h.CoreSteal)
	require.Equal(t, uint64(180), h.Busy)
	require.Equal(t, []uint64{520, 510}, h.CoreTotal)
	later = Host{Total: 2030, Steal: 130, CoreTotal: []uint64{1020, 1010}, CoreSteal: []uint64{120, 10}}
	all, cores = StealPercent(h, later)
	require.InDelta(t, 10, all, 1e-9)
	require.InDelta(t, 20, cores[0], 1e-9)
	require.InDelta(t, 0, cores[1], 1e-9)

	_, err = parseHost([]byte("intr 1\n"))
	require.ErrorIs(t, err, ErrFormat)
}

func TestProcessSeesOwnWork(t *testing.T) {
	// Spin until 50 ms of CPU show (a shared machine may give this
	// goroutine a fraction of a core, so wall time is only a cap).
	before, err := Process(os.Getpid())
	require.NoError(t, err)
	x := 0
	var after time.Duration
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		for range 100000 {
			x++
		}
		after, err = Process(os.Getpid())
		require.NoError(t, err)
		if after-before >= 50*time.Millisecond {
			break
		}
	}
	require.GreaterOrEqual(t, after-before, 50*time.Millisecond, "spun %d times", x)
	// Nanosecond resolution: a millisecond of work shows.
	before = after
	for deadline := time.Now().Add(3 * time.Millisecond); time.Now().Before(deadline); {
		x++
	}
	after, err = Process(os.Getpid())
	require.NoError(t, err)
	require.Greater(t, after, before)

	h1, err := ReadHost()
	require.NoError(t, err)
	require.NotEmpty(t, h1.CoreTotal)
	_, err = Process(1 << 30)
	require.Error(t, err)
}
