package sip_test

import (
	"bufio"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"net/textproto"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/sip"
	"github.com/voiced/voiced/sip/internal/torture"
	"github.com/voiced/voiced/sip/siptest"
)

// tortureCase is one RFC 4475 message and what the node answers it.
// udp and tcp are the status codes expected in order (100 Trying
// included); none means no answer at all. counted says the message is
// dropped as unparseable and counted (Server.Unparseable).
type tortureCase struct {
	name               string
	udp, tcp           []int
	countUDP, countTCP bool
}

// none is "no response".
var none = []int{}

func both(codes ...int) ([]int, []int) { return codes, codes }

func tc(name string, codes []int, counted bool) tortureCase {
	return tortureCase{name: name, udp: codes, tcp: codes, countUDP: counted, countTCP: counted}
}

// tortureCases: RFC 4475 section 3.1.1 (valid), 3.1.2 (invalid), then
// 3.2, 3.3 and 3.4. The numbers the messages call are none the test
// admitter knows (404), an INVITE with a To tag is a re-INVITE of no
// dialog (481), and methods we do not serve get 405 (REGISTER
// included: the node is no registrar).
var tortureCases = []tortureCase{
	// 3.1.1
	tc("wsinv", []int{481}, false),
	tc("intmeth", []int{405}, false),
	tc("esc01", []int{100, 404}, false),
	tc("escnull", []int{405}, false),
	tc("esc02", []int{405}, false),
	tc("lwsdisp", []int{200}, false),
	tc("longreq", []int{100, 404}, false),
	// Over UDP the INVITE is noise after the REGISTER's body (18.3).
	// Over TCP it is a request of its own: 400 for it lacks a Contact,
	// and its body is 3 octets longer than its Content-Length, so those
	// (and the CRLF after) are no message (counted).
	{name: "dblreq", udp: []int{405}, tcp: []int{100, 400, 405}, countTCP: true},
	tc("semiuri", []int{200}, false),
	tc("transports", []int{200}, false),
	tc("mpart01", []int{405}, false),
	tc("unreason", none, false),
	tc("noreason", none, false),
	// 3.1.2
	tc("badinv01", []int{400}, false),
	// Over TCP the node waits for the rest of the body (RFC 4475).
	{name: "clerr", udp: []int{400}, tcp: none},
	tc("ncl", []int{400}, false),
	tc("scalar02", []int{400}, false),
	tc("scalarlg", none, true),
	tc("quotbal", []int{400}, false),
	tc("ltgtruri", []int{400}, false),
	tc("lwsruri", []int{400}, false),
	tc("lwsstart", []int{400}, false),
	tc("trws", []int{400}, false),
	tc("escruri", []int{400}, false),
	tc("baddate", []int{400}, false),
	tc("regbadct", []int{400}, false),
	tc("badaspec", []int{400}, false),
	tc("baddn", []int{400}, false),
	tc("badvers", []int{505}, false),
	tc("mismatch01", []int{400}, false),
	tc("mismatch02", []int{400}, false),
	tc("bigcode", none, true),
	// 3.2, 3.3, 3.4
	tc("badbranch", []int{200}, false),
	tc("insuf", []int{400}, false),
	tc("unkscm", []int{416}, false),
	tc("novelsc", []int{416}, false),
	tc("unksm2", []int{405}, false),
	tc("bext01", []int{420}, false),
	tc("invut", []int{100, 415}, false),
	tc("regaut01", []int{405}, false),
	tc("multi01", []int{400}, false),
	tc("mcl01", []int{400}, false),
	tc("bcast", none, false),
	tc("zeromf", []int{200}, false),
	tc("cparam01", []int{405}, false),
	tc("cparam02", []int{405}, false),
	tc("regescrt", []int{405}, false),
	tc("sdp01", []int{100, 404}, false),
	tc("inv2543", []int{400}, false),
}

const tortureDir = "testdata/rfc4475"

// tortureExchange sends msg over network to addr and returns the status
// codes of the responses that arrive within wait, in order. Over UDP the
// message leaves from a random loopback address at the port of its top
// Via (5060 unless it names one): RFC 3261 section 18.2.2 answers the
// source address at that port, and the torture messages name hosts of
// example.com.
func tortureExchange(t *testing.T, network, addr string, msg []byte, want int, wait time.Duration) []int {
	t.Helper()
	var c net.Conn
	var err error
	if network == "udp" {
		local := &net.UDPAddr{IP: net.IPv4(127, byte(1+rand.IntN(250)), byte(rand.IntN(256)), byte(1+rand.IntN(250))), Port: viaPort(msg)}
		c, err = net.DialUDP("udp", local, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
	} else {
		c, err = net.Dial(network, addr)
	}
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write(msg)
	require.NoError(t, err)
	deadline := time.Now().Add(wait)
	codes := []int{}
	done := func() bool { return want > 0 && len(codes) >= want }
	if network == "udp" {
		buf := make([]byte, 65536)
		for !done() {
			c.SetReadDeadline(deadline)
			n, err := c.Read(buf)
			if err != nil {
				break
			}
			codes = append(codes, statusOf(string(buf[:n])))
		}
		return codes
	}
	c.SetReadDeadline(deadline)
	r := textproto.NewReader(bufio.NewReader(c))
	for !done() {
		line, err := r.ReadLine()
		if err != nil {
			break
		}
		hdr, err := r.ReadMIMEHeader()
		if err != nil && len(hdr) == 0 {
			break
		}
		cl := hdr.Get("Content-Length")
		if cl == "" {
			cl = hdr.Get("L")
		}
		if n, _ := strconv.Atoi(cl); n > 0 {
			if _, err := io.CopyN(io.Discard, r.R, int64(n)); err != nil {
				break
			}
		}
		codes = append(codes, statusOf(line))
	}
	return codes
}

// viaPort is the port of msg's top Via sent-by, 5060 when it has none
// (or rport asks for the source port, which any port then is).
func viaPort(msg []byte) int {
	m := viaRE.FindSubmatch(msg)
	if m == nil || len(m[1]) == 0 {
		return 5060
	}
	p, _ := strconv.Atoi(string(m[1]))
	return p
}

var viaRE = regexp.MustCompile(`(?m)^(?:Via|v)\s*:[^\r]*?/\s*\w+\s+[^\s;:,]+(?::(\d+))?`)

// TestRFC4475 sends every torture message of RFC 4475 to the node's
// Server over UDP and over TCP and checks the responses.
func TestRFC4475(t *testing.T) {
	siptest.CheckLeaks(t)
	for _, c := range tortureCases {
		msg, err := torture.Load(tortureDir, c.name)
		require.NoError(t, err)
		for _, tr := range []struct {
			network, addr string
			want          []int
			counted       bool
		}{{"udp", "", c.udp, c.countUDP}, {"tcp", "", c.tcp, c.countTCP}} {
			t.Run(c.name+"/"+tr.network, func(t *testing.T) {
				// A server each: several messages share a branch.
				e := newEnv(t, sip.Config{}, nil)
				tr.addr = e.udp.String()
				if tr.network == "tcp" {
					tr.addr = e.tcp.String()
				}
				before := e.srv.Unparseable()
				wait := 3 * time.Second
				if len(tr.want) == 0 {
					wait = 300 * time.Millisecond
				}
				got := tortureExchange(t, tr.network, tr.addr, msg, len(tr.want), wait)
				t.Logf("%s over %s: %v", c.name, tr.network, got)
				for _, code := range got {
					require.False(t, code >= 200 && code < 300 && slices.Contains(invalid, c.name), "2xx to an invalid message")
				}
				// Requests over a stream run concurrently (dblreq's two).
				slices.Sort(got)
				require.Equal(t, tr.want, got)
				if tr.counted {
					require.Eventually(t, func() bool { return e.srv.Unparseable() > before }, time.Second, 10*time.Millisecond)
				} else {
					require.Equal(t, before, e.srv.Unparseable(), "counted as unparseable")
				}
			})
		}
	}
}

// invalid are the messages of RFC 4475 section 3.1.2.
var invalid = []string{"badinv01", "clerr", "ncl", "scalar02", "scalarlg", "quotbal", "ltgtruri", "lwsruri", "lwsstart",
	"trws", "escruri", "baddate", "regbadct", "badaspec", "baddn", "badvers", "mismatch01", "mismatch02", "bigcode"}
