//go:build linux

package udp

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var loopback = netip.MustParseAddrPort("127.0.0.1:0")

func TestBatchRoundTrip(t *testing.T) {
	a, err := Listen(loopback, 1<<20)
	require.NoError(t, err)
	defer a.Close()
	b, err := Listen(loopback, 1<<20)
	require.NoError(t, err)
	defer b.Close()
	c, err := Listen(loopback, 1<<20)
	require.NoError(t, err)
	defer c.Close()

	// 300 datagrams alternating between two destinations, each carrying its index.
	const n = 300
	out := make([]Message, n)
	for i := range out {
		buf := make([]byte, 4+i%50)
		binary.BigEndian.PutUint32(buf, uint32(i))
		dst := b.LocalAddr()
		if i%2 == 1 {
			dst = c.LocalAddr()
		}
		out[i] = Message{Buf: buf, Addr: dst}
	}
	before := time.Now().UnixNano()
	sent, err := a.WriteBatch(out)
	require.NoError(t, err)
	require.Equal(t, n, sent)

	for _, rc := range []struct {
		conn *Conn
		odd  int
	}{{b, 0}, {c, 1}} {
		in := make([]Message, 64)
		for i := range in {
			in[i].Buf = make([]byte, 1500)
		}
		next := rc.odd
		for next < n {
			got, err := rc.conn.ReadBatch(in)
			require.NoError(t, err)
			require.Positive(t, got)
			for _, m := range in[:got] {
				require.Equal(t, a.LocalAddr(), m.Addr)
				require.Equal(t, 4+next%50, m.N)
				require.Equal(t, uint32(next), binary.BigEndian.Uint32(m.Buf))
				require.GreaterOrEqual(t, m.Time, before)
				require.LessOrEqual(t, m.Time, time.Now().UnixNano())
				next += 2
			}
		}
	}
}

func TestTruncatesLongDatagram(t *testing.T) {
	a, err := Listen(loopback, 0)
	require.NoError(t, err)
	defer a.Close()
	b, err := Listen(loopback, 0)
	require.NoError(t, err)
	defer b.Close()
	_, err = a.WriteBatch([]Message{{Buf: make([]byte, 100), Addr: b.LocalAddr()}})
	require.NoError(t, err)
	in := []Message{{Buf: make([]byte, 10)}}
	got, err := b.ReadBatch(in)
	require.NoError(t, err)
	require.Equal(t, 1, got)
	require.Equal(t, 10, in[0].N)
}

func TestRejectsIPv6(t *testing.T) {
	_, err := Listen(netip.MustParseAddrPort("[::1]:0"), 0)
	require.ErrorIs(t, err, ErrNotIPv4)
	a, err := Listen(loopback, 0)
	require.NoError(t, err)
	defer a.Close()
	_, err = a.WriteBatch([]Message{{Buf: []byte{1}, Addr: netip.MustParseAddrPort("[::1]:9")}})
	require.ErrorIs(t, err, ErrNotIPv4)
}

func TestCloseUnblocksRead(t *testing.T) {
	a, err := Listen(loopback, 0)
	require.NoError(t, err)
	done := make(chan error)
	go func() {
		_, err := a.ReadBatch([]Message{{Buf: make([]byte, 10)}})
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, a.Close())
	select {
	case err := <-done:
		require.Error(t, err)
	case <-time.After(2 * time.Second):
		t.Fatal("ReadBatch did not return after Close")
	}
}

func TestBatchAllocatesNothing(t *testing.T) {
	a, err := Listen(loopback, 1<<20)
	require.NoError(t, err)
	defer a.Close()
	b, err := Listen(loopback, 1<<20)
	require.NoError(t, err)
	defer b.Close()
	out := make([]Message, 16)
	for i := range out {
		out[i] = Message{Buf: make([]byte, 172), Addr: b.LocalAddr()}
	}
	in := make([]Message, 16)
	for i := range in {
		in[i].Buf = make([]byte, 1500)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := a.WriteBatch(out); err != nil {
			t.Fatal(err)
		}
		for got := 0; got < len(out); {
			n, err := b.ReadBatch(in[:len(out)-got])
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
	})
	require.Zero(t, allocs)
}

func BenchmarkWriteReadBatch64(b *testing.B) {
	a, err := Listen(loopback, 4<<20)
	require.NoError(b, err)
	defer a.Close()
	r, err := Listen(loopback, 4<<20)
	require.NoError(b, err)
	defer r.Close()
	out := make([]Message, 64)
	for i := range out {
		out[i] = Message{Buf: make([]byte, 172), Addr: r.LocalAddr()}
	}
	in := make([]Message, 64)
	for i := range in {
		in[i].Buf = make([]byte, 1500)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.WriteBatch(out); err != nil {
			b.Fatal(err)
		}
		for got := 0; got < len(out); {
			n, err := r.ReadBatch(in[:len(out)-got])
			if err != nil {
				b.Fatal(err)
			}
			got += n
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64), "ns/packet")
}
