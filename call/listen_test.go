package call

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/codecs/g711"
	"github.com/voiced/voiced/control/calls"
)

// listenServer serves the listen socket of tap's listeners in format
// (what ListenHandler does once the token is checked).
func listenServer(t *testing.T, tap *Tap, format string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l := tap.Listen(listenBuffer)
		nc, rw, _, err := ws.HTTPUpgrader{}.Upgrade(r, w)
		if err != nil {
			return
		}
		serveListener(nc, rw.Reader, l, format)
		tap.Stop(l)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func dialListen(t *testing.T, url string, readBuf int) (net.Conn, io.ReadWriter) {
	t.Helper()
	d := ws.Dialer{}
	if readBuf > 0 {
		d.NetDial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err == nil {
				_ = c.(*net.TCPConn).SetReadBuffer(readBuf)
			}
			return c, err
		}
	}
	nc, br, _, err := d.Dial(context.Background(), "ws"+strings.TrimPrefix(url, "http"))
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	var r io.Reader = nc
	if br != nil {
		r = io.MultiReader(br, nc)
	}
	return nc, struct {
		io.Reader
		io.Writer
	}{r, nc}
}

// waitListeners waits until tap has n listeners.
func waitListeners(t *testing.T, tap *Tap, n int32) {
	require.Eventually(t, func() bool { return tap.n.Load() == n }, 5*time.Second, time.Millisecond)
}

func tone(rate, i int) []int16 {
	f := make([]int16, rate/50)
	for k := range f {
		f[k] = int16(8000 * math.Sin(2*math.Pi*440*float64(i*len(f)+k)/float64(rate)))
	}
	return f
}

// TestListenSocketStreamsTheMixAndClosesAtTheEnd: 16 kHz frames go out
// as they are in pcm16 (the caller's and the agent's mixed), as 8 kHz
// µ-law in g711_ulaw, to two listeners at once; the call's end closes
// both with 1000 "call ended".
func TestListenSocketStreamsTheMixAndClosesAtTheEnd(t *testing.T) {
	tap := &Tap{}
	pcmSrv, ulawSrv := listenServer(t, tap, calls.ListenPCM16), listenServer(t, tap, calls.ListenULaw)
	pc, prw := dialListen(t, pcmSrv.URL, 0)
	uc, urw := dialListen(t, ulawSrv.URL, 0)
	waitListeners(t, tap, 2)
	const frames = 50
	var sent []int16
	for i := range frames {
		caller, agent := tone(16000, i), tone(16000, i)
		for k := range agent {
			agent[k] /= 2
		}
		tap.Agent(agent, true)
		tap.Caller(caller)
		for k := range caller {
			sent = append(sent, caller[k]+agent[k])
		}
	}
	tap.Close()

	read := func(nc net.Conn, rw io.ReadWriter) (msgs [][]byte, closed wsutil.ClosedError) {
		for {
			_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			data, op, err := wsutil.ReadServerData(rw)
			if errors.As(err, &closed) {
				return msgs, closed
			}
			require.NoError(t, err)
			require.Equal(t, ws.OpBinary, op)
			msgs = append(msgs, data)
		}
	}
	msgs, cl := read(pc, prw)
	require.Equal(t, ws.StatusNormalClosure, cl.Code)
	require.Equal(t, "call ended", cl.Reason)
	require.Len(t, msgs, frames)
	var got []int16
	for _, m := range msgs {
		require.Len(t, m, 640, "20 ms of 16 kHz 16-bit PCM")
		for i := 0; i < len(m); i += 2 {
			got = append(got, int16(binary.LittleEndian.Uint16(m[i:])))
		}
	}
	require.Equal(t, sent, got, "pcm16 is the mix itself, little-endian")

	msgs, cl = read(uc, urw)
	require.Equal(t, ws.StatusNormalClosure, cl.Code)
	require.GreaterOrEqual(t, len(msgs), frames-2, "the resampler holds back a few ms")
	var dec []int16
	for _, m := range msgs {
		require.Len(t, m, 160, "20 ms of 8 kHz µ-law")
		out := make([]int16, len(m))
		g711.DecodeULawTo(out, m)
		dec = append(dec, out...)
	}
	// The 440 Hz mix survives the 2:1 resampling and µ-law: compare the
	// level of the steady part (the filter's delay aside).
	rms := func(s []int16) float64 {
		var e float64
		for _, v := range s {
			e += float64(v) * float64(v)
		}
		return math.Sqrt(e / float64(len(s)))
	}
	want, have := rms(sent[len(sent)/2:]), rms(dec[len(dec)/4:])
	require.InDelta(t, want, have, want*0.1, "µ-law level %.0f vs mix %.0f", have, want)
}

// TestListenSocketSlowListener: a listener that reads nothing while the
// call goes on never holds the call up (the tap's feed returns at once),
// and once its queue passes a second the socket closes with 1008.
func TestListenSocketSlowListener(t *testing.T) {
	tap := &Tap{}
	srv := listenServer(t, tap, calls.ListenPCM16)
	nc, rw := dialListen(t, srv.URL, 4096)
	waitListeners(t, tap, 1)
	start := time.Now()
	for i := range 1000 { // 20 s of audio, fed far faster than real time
		tap.Agent(nil, false)
		tap.Caller(tone(16000, i))
		if i%50 == 0 {
			time.Sleep(5 * time.Millisecond) // let the writer run
		}
	}
	require.Less(t, time.Since(start), 2*time.Second, "the call's side never waits for the listener")
	var closed wsutil.ClosedError
	n := 0
	for {
		_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, _, err := wsutil.ReadServerData(rw)
		if errors.As(err, &closed) {
			break
		}
		require.NoError(t, err)
		n++
	}
	require.Equal(t, ws.StatusPolicyViolation, closed.Code)
	require.Contains(t, closed.Reason, "behind")
	require.Less(t, n, 1000, "frames were dropped, not queued without bound")
	t.Logf("slow listener got %d of 1000 frames before 1008", n)
	waitListeners(t, tap, 0)
}

// TestListenHandlerRefusals: the token is checked before the upgrade
// (401: none, forged, expired, another call's), then the request (426),
// then whether the node holds the call (409).
func TestListenHandlerRefusals(t *testing.T) {
	key := calls.ListenKey([]byte("test secret"))
	srv := httptest.NewServer((&Node{}).ListenHandler(key))
	defer srv.Close()
	good := calls.ListenToken(key, calls.ListenGrant{CallID: 7, OrgID: 1, Format: calls.ListenPCM16, Expires: time.Now().Add(time.Minute)})
	expired := calls.ListenToken(key, calls.ListenGrant{CallID: 7, OrgID: 1, Format: calls.ListenPCM16, Expires: time.Now().Add(-time.Second)})
	forged := calls.ListenToken([]byte("other key"), calls.ListenGrant{CallID: 7, OrgID: 1, Format: calls.ListenPCM16, Expires: time.Now().Add(time.Minute)})
	get := func(path string, h http.Header) int {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		for k, v := range h {
			req.Header[k] = v
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode
	}
	up := http.Header{"Upgrade": {"websocket"}, "Connection": {"Upgrade"}, "Sec-Websocket-Version": {"13"}, "Sec-Websocket-Key": {"dGhlIHNhbXBsZSBub25jZQ=="}}
	require.Equal(t, 401, get("/v1/calls/7/listen", up))
	require.Equal(t, 401, get("/v1/calls/7/listen?token="+expired, up))
	require.Equal(t, 401, get("/v1/calls/7/listen?token="+forged, up))
	require.Equal(t, 401, get("/v1/calls/8/listen?token="+good, up), "a token is for its call only")
	require.Equal(t, 401, get("/v1/calls/7/listen?token="+strings.Replace(good, ".pcm16.", ".g711_ulaw.", 1), up), "the format is signed")
	require.Equal(t, 426, get("/v1/calls/7/listen?token="+good, nil))
	require.Equal(t, 409, get("/v1/calls/7/listen?token="+good, up), "the node does not hold call 7")
	bearer := up.Clone()
	bearer.Set("Authorization", "Bearer "+good)
	require.Equal(t, 409, get("/v1/calls/7/listen", bearer), "the token may come as a bearer credential")
}

// BenchmarkListenEncode is one listener's cost per 20 ms frame: pcm16
// from a wideband call (a copy), pcm16 from a G.711 call (2:1 upsampling),
// µ-law from a wideband call (downsampling and encoding).
func BenchmarkListenEncode(b *testing.B) {
	for _, c := range []struct {
		name   string
		rate   int
		format string
	}{{"pcm16-from-16k", 16000, calls.ListenPCM16}, {"pcm16-from-8k", 8000, calls.ListenPCM16}, {"ulaw-from-16k", 16000, calls.ListenULaw}} {
		b.Run(c.name, func(b *testing.B) {
			e := listenEncoder{format: c.format}
			f := tone(c.rate, 0)
			b.ReportAllocs()
			for b.Loop() {
				e.encode(f)
			}
		})
	}
}
