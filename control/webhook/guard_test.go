package webhook_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/webhook"
)

func TestAllowed(t *testing.T) {
	for _, tc := range []struct {
		ip         string
		loopbackOK bool
		want       bool
	}{
		{"93.184.215.14", false, true},
		{"2606:2800:21f:cb07:6820:80da:af6b:8b2c", false, true},
		{"8.8.8.8", false, true},
		{"127.0.0.1", false, false},
		{"127.0.0.1", true, true},
		{"127.9.9.9", true, true},
		{"::1", false, false},
		{"::1", true, true},
		{"::ffff:127.0.0.1", false, false},
		{"10.1.2.3", true, false},
		{"172.16.0.1", true, false},
		{"192.168.1.1", true, false},
		{"169.254.169.254", true, false}, // cloud metadata
		{"100.64.0.1", false, false},
		{"0.0.0.0", true, false},
		{"0.1.2.3", false, false},
		{"224.0.0.1", false, false},
		{"255.255.255.255", false, false},
		{"198.18.0.1", false, false},
		{"::", false, false},
		{"fe80::1", false, false},
		{"fd00::1", false, false},
		{"ff02::1", false, false},
		{"64:ff9b::a00:1", false, false}, // NAT64 of 10.0.0.1
		{"2002:a00:1::", false, false},   // 6to4 of 10.0.0.1
		{"::ffff:10.0.0.1", false, false},
	} {
		require.Equal(t, tc.want, webhook.Allowed(netip.MustParseAddr(tc.ip), tc.loopbackOK), "%s loopbackOK=%v", tc.ip, tc.loopbackOK)
	}
}

func TestClientRefusesInternalAddresses(t *testing.T) {
	// A listener on loopback stands in for an internal service.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	get := func(c *http.Client, host string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+net.JoinHostPort(host, strconv.Itoa(port))+"/", nil)
		res, err := c.Do(req)
		if err == nil {
			res.Body.Close()
		}
		return err
	}
	strict := webhook.NewClient(false, 5*time.Second)
	require.ErrorIs(t, get(strict, "127.0.0.1"), webhook.ErrBlockedAddress)
	require.ErrorIs(t, get(strict, "localhost"), webhook.ErrBlockedAddress)
	loose := webhook.NewClient(true, 5*time.Second)
	// Allowed through the guard (the listener then hangs up: not a guard error).
	err = get(loose, "127.0.0.1")
	require.False(t, errors.Is(err, webhook.ErrBlockedAddress), "%v", err)
	// A name that is not a local name but resolves to loopback is refused
	// even when loopback is allowed (DNS rebinding). localtest.me-style
	// names need DNS; the numeric form of another loopback spelling does not.
	require.ErrorIs(t, get(loose, "127.0.0.2"), webhook.ErrBlockedAddress)
	// Numeric spellings of loopback and private addresses are read as a
	// resolver reads them and refused before any lookup: sent to DNS as
	// names they would fail with "no such host" instead (or be answered
	// by whatever the resolver says).
	for _, host := range []string{"2130706433", "0177.0.0.1", "127.1", "0x7f000001", "0x0a.1", "017700000001", "1.2.3.999"} {
		err := get(loose, host)
		require.ErrorIs(t, err, webhook.ErrBlockedAddress, host)
		var dnsErr *net.DNSError
		require.False(t, errors.As(err, &dnsErr), "%s went to DNS: %v", host, err)
	}
}
