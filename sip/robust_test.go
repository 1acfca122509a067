package sip_test

import (
	"bufio"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/sip"
	"github.com/voiced/voiced/sip/siptest"
)

// options is a well-formed OPTIONS from addr (host:port).
func options(from string, n int) string {
	return "OPTIONS sip:probe@example.com SIP/2.0\r\n" +
		"Via: SIP/2.0/UDP " + from + ";branch=z9hG4bK-opt" + strconv.Itoa(n) + "\r\n" +
		"From: <sip:probe@example.com>;tag=t" + strconv.Itoa(n) + "\r\n" +
		"To: <sip:probe@example.com>\r\n" +
		"Call-ID: opt-" + strconv.Itoa(n) + "@test\r\n" +
		"CSeq: 1 OPTIONS\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n"
}

// exchangeUDP sends msg from ip and returns the status code of the first
// response, or 0 when none arrives within wait.
func exchangeUDP(t *testing.T, ip string, to string, msg func(local string) string, wait time.Duration) int {
	t.Helper()
	c, err := net.ListenPacket("udp", ip+":0")
	require.NoError(t, err)
	defer c.Close()
	dst, err := net.ResolveUDPAddr("udp", to)
	require.NoError(t, err)
	_, err = c.WriteTo([]byte(msg(c.LocalAddr().String())), dst)
	require.NoError(t, err)
	buf := make([]byte, 65536)
	for {
		c.SetReadDeadline(time.Now().Add(wait))
		n, _, err := c.ReadFrom(buf)
		if err != nil {
			return 0
		}
		// Skip 100 Trying: the final answer is what counts.
		if code := statusOf(string(buf[:n])); code != 100 {
			return code
		}
	}
}

func statusOf(res string) int {
	f := strings.Fields(res)
	if len(f) < 2 || f[0] != "SIP/2.0" {
		return -1
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// hostile are malformed or abusive messages; want lists acceptable
// outcomes (0: dropped without an answer).
var hostile = []struct {
	name string
	msg  func(local string) string
	want []int
}{
	{"garbage", func(string) string { return "\x00\x01\x02 not sip at all \xff\xfe\r\n\r\n" }, []int{0}},
	{"bad version", func(l string) string { return strings.Replace(options(l, 1), "SIP/2.0\r\n", "SIP/3.0\r\n", 1) }, []int{0, 400, 505}},
	{"no via", func(l string) string {
		return strings.Replace(options(l, 2), "Via: SIP/2.0/UDP "+l+";branch=z9hG4bK-opt2\r\n", "", 1)
	}, []int{0, 400}},
	{"no cseq", func(l string) string { return strings.Replace(options(l, 3), "CSeq: 1 OPTIONS\r\n", "", 1) }, []int{0, 400}},
	{"no call-id", func(l string) string { return strings.Replace(options(l, 4), "Call-ID: opt-4@test\r\n", "", 1) }, []int{0, 400}},
	{"huge header", func(l string) string {
		return strings.Replace(options(l, 5), "Max-Forwards", "X-Junk: "+strings.Repeat("a", 20000)+"\r\nMax-Forwards", 1)
	}, []int{0}},
	{"content-length too long", func(l string) string {
		return strings.Replace(options(l, 6), "Content-Length: 0", "Content-Length: 500", 1) + "short"
	}, []int{0, 400}},
	{"content-length negative", func(l string) string {
		return strings.Replace(options(l, 7), "Content-Length: 0", "Content-Length: -5", 1)
	}, []int{0, 400}},
	{"invite bad sdp", func(l string) string {
		body := "v=0\r\nthis is not sdp\r\n"
		return "INVITE sip:" + agentNumber + "@example.com SIP/2.0\r\nVia: SIP/2.0/UDP " + l + ";branch=z9hG4bK-inv8\r\n" +
			"From: <sip:x@example.com>;tag=a8\r\nTo: <sip:" + agentNumber + "@example.com>\r\nCall-ID: inv-8@test\r\nCSeq: 1 INVITE\r\n" +
			"Contact: <sip:x@" + l + ">\r\nContent-Type: application/sdp\r\nMax-Forwards: 70\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	}, []int{400}},
	{"invite without contact", func(l string) string {
		return "INVITE sip:" + agentNumber + "@example.com SIP/2.0\r\nVia: SIP/2.0/UDP " + l + ";branch=z9hG4bK-inv9\r\n" +
			"From: <sip:x@example.com>;tag=a9\r\nTo: <sip:" + agentNumber + "@example.com>\r\nCall-ID: inv-9@test\r\nCSeq: 1 INVITE\r\n" +
			"Max-Forwards: 70\r\nContent-Length: 0\r\n\r\n"
	}, []int{400}},
	{"bye outside dialog", func(l string) string {
		return "BYE sip:x@example.com SIP/2.0\r\nVia: SIP/2.0/UDP " + l + ";branch=z9hG4bK-bye10\r\n" +
			"From: <sip:x@example.com>;tag=a10\r\nTo: <sip:y@example.com>;tag=b10\r\nCall-ID: bye-10@test\r\nCSeq: 2 BYE\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n"
	}, []int{481}},
	{"unknown method", func(l string) string {
		return strings.ReplaceAll(options(l, 11), "OPTIONS", "FROBNICATE")
	}, []int{405}},
	{"require unknown extension", func(l string) string {
		return "INVITE sip:" + agentNumber + "@example.com SIP/2.0\r\nVia: SIP/2.0/UDP " + l + ";branch=z9hG4bK-inv12\r\n" +
			"From: <sip:x@example.com>;tag=a12\r\nTo: <sip:" + agentNumber + "@example.com>\r\nCall-ID: inv-12@test\r\nCSeq: 1 INVITE\r\n" +
			"Contact: <sip:x@" + l + ">\r\nRequire: 100rel, foo\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n"
	}, []int{420}},
}

type hostileMsg = struct {
	name string
	msg  func(local string) string
	want []int
}

// wait is how long to wait for an answer: briefly when dropping is
// acceptable, long enough for a loaded machine when an answer is due.
func wait(h hostileMsg) time.Duration {
	if slices.Contains(h.want, 0) {
		return 300 * time.Millisecond
	}
	return 3 * time.Second
}

// TestHostileUDP: malformed and hostile datagrams get a 4xx/5xx or are
// dropped; the node keeps answering.
func TestHostileUDP(t *testing.T) {
	siptest.CheckLeaks(t)
	e := newEnv(t, sip.Config{}, nil)
	for _, h := range hostile {
		t.Run(h.name, func(t *testing.T) {
			got := exchangeUDP(t, "127.0.0.1", e.udp.String(), h.msg, wait(h))
			require.Contains(t, h.want, got)
			require.Equal(t, 200, exchangeUDP(t, "127.0.0.1", e.udp.String(), func(l string) string { return options(l, 99) }, time.Second))
		})
	}
	require.Zero(t, e.srv.ActiveCalls())
}

// TestHostileTCP: the same over TCP. A message over the size limit
// closes the connection; the listener takes new ones.
func TestHostileTCP(t *testing.T) {
	siptest.CheckLeaks(t)
	e := newEnv(t, sip.Config{}, nil)
	for _, h := range hostile {
		t.Run(h.name, func(t *testing.T) {
			c, err := net.Dial("tcp", e.tcp.String())
			require.NoError(t, err)
			defer c.Close()
			msg := strings.ReplaceAll(h.msg(c.LocalAddr().String()), "SIP/2.0/UDP", "SIP/2.0/TCP")
			_, err = c.Write([]byte(msg))
			require.NoError(t, err)
			c.SetReadDeadline(time.Now().Add(wait(h)))
			code := 0
			r := bufio.NewReader(c)
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					break
				}
				if strings.HasPrefix(line, "SIP/") {
					if code = statusOf(line); code != 100 {
						break
					}
				}
			}
			require.Contains(t, h.want, code)
			require.Equal(t, 200, tcpOptions(t, e.tcp.String()))
		})
	}
}

func tcpOptions(t *testing.T, addr string) int {
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte(strings.ReplaceAll(options(c.LocalAddr().String(), 98), "SIP/2.0/UDP", "SIP/2.0/TCP")))
	require.NoError(t, err)
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	return statusOf(line)
}

// TestRateLimit: a source over its rate is dropped; others are not.
func TestRateLimit(t *testing.T) {
	siptest.CheckLeaks(t)
	e := newEnv(t, sip.Config{RatePerSecond: 10, Burst: 20}, nil)
	c, err := net.ListenPacket("udp", "127.0.0.2:0")
	require.NoError(t, err)
	defer c.Close()
	dst, _ := net.ResolveUDPAddr("udp", e.udp.String())
	const sent = 300
	start := time.Now()
	for i := range sent {
		_, err := c.WriteTo([]byte(options(c.LocalAddr().String(), 1000+i)), dst)
		require.NoError(t, err)
	}
	answered := 0
	buf := make([]byte, 4096)
	for {
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		if _, _, err := c.ReadFrom(buf); err != nil {
			break
		}
		answered++
	}
	allowed := 20 + int(10*time.Since(start).Seconds()) + 1
	require.LessOrEqual(t, answered, allowed, "answered more than the bucket allows")
	require.GreaterOrEqual(t, answered, 15, "the burst is answered")
	// The kernel may drop some datagrams too; the limiter drops the rest.
	require.Greater(t, e.srv.Dropped(), uint64(0))
	// Another source is unaffected.
	require.Equal(t, 200, exchangeUDP(t, "127.0.0.3", e.udp.String(), func(l string) string { return options(l, 2000) }, time.Second))
	t.Logf("flood of %d: %d answered, %d dropped", sent, answered, e.srv.Dropped())
}

// TestTCPConnectionLimit: connections over MaxConnsPerIP are closed at
// once.
func TestTCPConnectionLimit(t *testing.T) {
	siptest.CheckLeaks(t)
	e := newEnv(t, sip.Config{MaxConnsPerIP: 3}, nil)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 3 {
		c, err := net.Dial("tcp", e.tcp.String())
		require.NoError(t, err)
		conns = append(conns, c)
	}
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", e.tcp.String())
		if err != nil {
			return false
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		_, err = c.Read(make([]byte, 1))
		return err != nil && !isTimeout(err)
	}, 3*time.Second, 50*time.Millisecond, "the fourth connection is closed")
	conns[0].Close()
	conns = conns[1:]
	require.Eventually(t, func() bool {
		defer func() { recover() }()
		return tcpOptionsQuiet(e.tcp.String()) == 200
	}, 3*time.Second, 50*time.Millisecond, "a slot frees when a connection closes")
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func tcpOptionsQuiet(addr string) int {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0
	}
	defer c.Close()
	fmt.Fprint(c, strings.ReplaceAll(options(c.LocalAddr().String(), 97), "SIP/2.0/UDP", "SIP/2.0/TCP"))
	c.SetReadDeadline(time.Now().Add(time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return 0
	}
	return statusOf(line)
}
