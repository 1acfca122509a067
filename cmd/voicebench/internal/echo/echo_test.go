package echo

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/voiced/voiced/cmd/voicebench/internal/load"
)

func TestEchoesEverySocket(t *testing.T) {
	s, err := Listen(netip.MustParseAddr("127.0.0.1"), 0, 3)
	require.NoError(t, err)
	defer s.Close()
	addrs := s.Addrs()
	require.Len(t, addrs, 3)
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer c.Close()
	buf := make([]byte, 64)
	for i, a := range addrs {
		_, err := c.WriteToUDPAddrPort([]byte{byte(i), 7}, a)
		require.NoError(t, err)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(2*time.Second)))
		n, from, err := c.ReadFromUDPAddrPort(buf)
		require.NoError(t, err)
		require.Equal(t, []byte{byte(i), 7}, buf[:n])
		require.Equal(t, a, from, "sent back from the socket it reached")
	}

	tgt := Target{Addrs: addrs}
	_, ans, err := tgt.Dial(context.Background(), load.Offer{Index: 4})
	require.NoError(t, err)
	require.Equal(t, addrs[1], ans.SendTo, "call 4 of 3 sockets wraps to the second")

	_, err = Listen(netip.MustParseAddr("127.0.0.1"), 0, 0)
	require.ErrorIs(t, err, ErrNoPorts)
	_, _, err = Target{}.Dial(context.Background(), load.Offer{})
	require.ErrorIs(t, err, ErrNoPorts)
}
