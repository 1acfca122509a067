package media

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func seq(from, n int) []int16 {
	s := make([]int16, n)
	for i := range s {
		s[i] = int16(from + i)
	}
	return s
}

func TestRingBasics(t *testing.T) {
	_, err := NewRing(0)
	require.ErrorIs(t, err, ErrRingCapacity)
	_, err = NewRing(-5)
	require.ErrorIs(t, err, ErrRingCapacity)

	r, err := NewRing(10)
	require.NoError(t, err)
	require.Equal(t, 10, r.Cap())
	require.Zero(t, r.Len())
	require.Equal(t, 10, r.Free())

	require.Equal(t, 4, r.Write(seq(0, 4)))
	require.Equal(t, 4, r.Len())
	require.Equal(t, 6, r.Free())

	p := make([]int16, 6)
	require.False(t, r.ReadFull(p), "not enough for a full read")
	require.Equal(t, 4, r.Len(), "a failed ReadFull reads nothing")

	require.Equal(t, 6, r.Write(seq(4, 9)), "only the free space is taken")
	require.Zero(t, r.Write(seq(99, 1)), "full")
	require.True(t, r.ReadFull(p))
	require.Equal(t, seq(0, 6), p)

	// Wrap around the end of the buffer.
	require.Equal(t, 5, r.Write(seq(10, 5)))
	got := make([]int16, 20)
	require.Equal(t, 9, r.Peek(got), "a peek across the wrap")
	require.Equal(t, seq(6, 9), got[:9])
	require.Equal(t, 9, r.Len(), "a peek consumes nothing")
	n := r.Read(got)
	require.Equal(t, 9, n)
	require.Equal(t, seq(6, 9), got[:n])
	require.Zero(t, r.Read(got))
	require.Zero(t, r.Len())
}

func TestRingDiscardAndReset(t *testing.T) {
	r, err := NewRing(8)
	require.NoError(t, err)
	r.Write(seq(0, 6))
	require.Equal(t, 2, r.Discard(2))
	require.Equal(t, 4, r.Len())
	require.Zero(t, r.Discard(-1))
	p := make([]int16, 2)
	require.True(t, r.ReadFull(p))
	require.Equal(t, seq(2, 2), p)
	require.Equal(t, 2, r.Discard(100), "discard stops at what is buffered")
	r.Write(seq(50, 7))
	r.Reset()
	require.Zero(t, r.Len())
	require.Equal(t, 8, r.Free())
	r.Write(seq(60, 3))
	require.Equal(t, 3, r.Read(make([]int16, 8)), "writes after Reset are kept")
}

// TestRingFramesFromRandomWrites: writes of arbitrary sizes come out as an
// unbroken sequence of fixed frames.
func TestRingFramesFromRandomWrites(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	r, err := NewRing(1000)
	require.NoError(t, err)
	next, want := 0, 0
	frame := make([]int16, 320)
	for range 5000 {
		chunk := seq(next, rng.IntN(700))
		next += r.Write(chunk)
		for r.ReadFull(frame) {
			require.Equal(t, seq(want, 320), frame)
			want += 320
		}
		require.Less(t, r.Len(), 320)
	}
	require.Greater(t, want, 100000)
}

// TestRingConcurrent runs a producer and a consumer goroutine; run with
// -race to check the hand-over.
func TestRingConcurrent(t *testing.T) {
	r, err := NewRing(2048)
	require.NoError(t, err)
	const total = 160 * 6000 // whole frames
	var wg sync.WaitGroup
	var stop atomic.Bool
	defer func() { // also on t.Fatal: the producer never outlives the test
		stop.Store(true)
		wg.Wait()
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(11, 12))
		for next := 0; next < total && !stop.Load(); {
			n := min(1+rng.IntN(500), total-next)
			next += r.Write(seq(next, n))
		}
	}()
	frame := make([]int16, 160)
	bad := -1
	deadline := time.Now().Add(20 * time.Second)
	for got := 0; got < total; {
		if !r.ReadFull(frame) {
			if time.Now().After(deadline) {
				t.Fatalf("stalled after %d of %d samples", got, total)
			}
			runtime.Gosched()
			continue
		}
		for i, v := range frame {
			if v != int16(got+i) && bad < 0 {
				bad = got + i
			}
		}
		got += len(frame)
	}
	require.Equal(t, -1, bad, "first out-of-order sample")
	require.Zero(t, r.Len())
}

func TestNoAllocations(t *testing.T) {
	a, b, dst := seq(0, 960), seq(100, 960), make([]int16, 960)
	r, err := NewRing(4000)
	require.NoError(t, err)
	chunk, frame := seq(0, 333), make([]int16, 320)
	g := GainFromDB(-3)
	for name, f := range map[string]func(){
		"MixTo":     func() { MixTo(dst, a, b) },
		"MixInto":   func() { MixInto(dst, a) },
		"Gain":      func() { g.Apply(dst) },
		"ApplyGain": func() { ApplyGain(dst, 2.5) },
		"RMS":       func() { _ = RMS(a) },
		"DBFS":      func() { _ = DBFS(a) },
		"Ring": func() {
			r.Write(chunk)
			for r.ReadFull(frame) {
			}
		},
	} {
		require.Zero(t, testing.AllocsPerRun(100, f), name)
	}
}
