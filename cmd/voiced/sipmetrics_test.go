package main

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The SIP server's drops are on /metrics (promtool-clean, as scrape
// checks): a datagram too malformed to answer (a request with no Via to
// address a response to) moves voiced_sip_messages_dropped_total's
// unparseable series, and nothing else moves the rate series.
func TestSIPDropsOnMetrics(t *testing.T) {
	sv := startTelephonyServe(t)
	defer sv.stop(t)
	const rate, unparseable = `voiced_sip_messages_dropped_total{reason="rate"}`, `voiced_sip_messages_dropped_total{reason="unparseable"}`
	m0 := scrape(t, sv.base)
	requireSeries(t, m0, rate, unparseable)
	require.Zero(t, m0[unparseable])

	c, err := net.Dial("udp", "127.0.0.1:"+strconv.Itoa(sv.sipPort))
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("OPTIONS sip:nobody@127.0.0.1 SIP/2.0\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n"))
	require.NoError(t, err)
	var m map[string]float64
	require.Eventually(t, func() bool { m = scrape(t, sv.base); return m[unparseable] == 1 }, 5*time.Second, 50*time.Millisecond, "%v", m)
	require.Equal(t, m0[rate], m[rate])
}
