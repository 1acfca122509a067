package rtp

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/voiced/voiced/media/mediatest"
)

// needTool returns the path of a command the test needs: when it is
// missing the test skips, or fails under CI=true.
func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not installed (Debian package %s)", name, pkg)
		}
		t.Skipf("%s not installed (Debian package %s)", name, pkg)
	}
	return p
}

// capture records the given UDP ports on loopback until stop is called.
// Both ends must be ours: other tests on the machine may reuse one of
// these port numbers once a session closes, talking to someone else.
func capture(t *testing.T, ports []int) (file string, stop func()) {
	t.Helper()
	var src, dst []string
	for _, p := range ports {
		src = append(src, "src port "+strconv.Itoa(p))
		dst = append(dst, "dst port "+strconv.Itoa(p))
	}
	return mediatest.Capture(t, "udp and ("+strings.Join(src, " or ")+") and ("+strings.Join(dst, " or ")+")")
}

type wirePkt struct {
	src            int
	pt             int
	seq            int
	ts             uint32
	ssrc           uint32
	marker         bool
	event          int
	end            bool
	duration       int
	rtcpTypes      []int
	rtcpSenderSSRC uint32
	at             float64 // capture time, seconds
}

// TestWireFormatTshark captures two sessions talking over the loopback
// (audio both ways, two DTMF digits, RTCP on the odd ports, BYE at Close)
// and decodes the capture with Wireshark's dissectors, an independent
// implementation of RTP, RTCP and RFC 4733.
func TestWireFormatTshark(t *testing.T) {
	tshark := needTool(t, "tshark", "tshark")
	pacer, ports := newPacer(t), newPorts(t)
	cfg := Config{RTCPInterval: 200 * time.Millisecond}
	a, b := newSession(t, cfg, pacer, ports), newSession(t, cfg, pacer, ports)
	pa, pb := int(a.LocalAddr().Port()), int(b.LocalAddr().Port())
	file, stop := capture(t, []int{pa, pa + 1, pb, pb + 1})
	require.NoError(t, a.Update(params(b, codecPCMU, dtmf8k)))
	require.NoError(t, b.Update(params(a, codecPCMU, dtmf8k)))

	require.NoError(t, a.SetSource(&tone{hz: 440, amp: 5000, rate: 16000}, 16000))
	require.NoError(t, b.SetSource(&tone{hz: 880, amp: 5000, rate: 16000}, 16000))
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, a.SendDTMF("7#", 100*time.Millisecond))
	time.Sleep(900 * time.Millisecond)
	require.NoError(t, a.Close())
	// b has read all of a's stream: its figures are final.
	time.Sleep(100 * time.Millisecond)
	heard := b.Snapshot()
	require.NoError(t, b.Close())
	stop()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := []string{"-r", file,
		"-d", fmt.Sprintf("udp.port==%d,rtp", pa), "-d", fmt.Sprintf("udp.port==%d,rtp", pb),
		"-d", fmt.Sprintf("udp.port==%d,rtcp", pa+1), "-d", fmt.Sprintf("udp.port==%d,rtcp", pb+1),
		"-d", "rtp.pt==101,rtpevent",
		"-T", "fields", "-E", "separator=;", "-E", "aggregator=,",
		"-e", "udp.srcport", "-e", "rtp.version", "-e", "rtp.p_type", "-e", "rtp.seq", "-e", "rtp.timestamp",
		"-e", "rtp.ssrc", "-e", "rtp.marker", "-e", "rtpevent.event_id", "-e", "rtpevent.end_of_event",
		"-e", "rtpevent.duration", "-e", "rtcp.pt", "-e", "rtcp.senderssrc", "-e", "_ws.expert", "-e", "frame.time_epoch"}
	out, err := exec.CommandContext(ctx, tshark, args...).Output()
	require.NoError(t, err)
	var pkts []wirePkt
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, ";")
		require.Len(t, f, 14, line)
		require.Empty(t, f[12], "Wireshark flags a problem: %s", line)
		at, err := strconv.ParseFloat(f[13], 64)
		require.NoError(t, err, line)
		p := wirePkt{src: atoi(f[0]), at: at}
		if f[1] != "" {
			require.Equal(t, "2", f[1])
			p.pt, p.seq, p.ts, p.ssrc = atoi(f[2]), atoi(f[3]), uint32(atou(f[4])), uint32(atou(f[5]))
			p.marker = f[6] == "1" || f[6] == "True"
			p.event = -1
			if f[7] != "" {
				p.event, p.end, p.duration = atoi(f[7]), f[8] == "1" || f[8] == "True", atoi(f[9])
			}
		} else {
			for _, x := range strings.Split(f[10], ",") {
				p.rtcpTypes = append(p.rtcpTypes, atoi(x))
			}
			p.rtcpSenderSSRC = uint32(atou(strings.Split(f[11], ",")[0]))
		}
		pkts = append(pkts, p)
	}

	for _, side := range []struct {
		s    *Session
		port int
	}{{a, pa}, {b, pb}} {
		var rtpPkts, rtcpPkts []wirePkt
		for _, p := range pkts {
			switch p.src {
			case side.port:
				rtpPkts = append(rtpPkts, p)
			case side.port + 1:
				rtcpPkts = append(rtcpPkts, p)
			}
		}
		require.Greater(t, len(rtpPkts), 40, "port %d", side.port)
		require.True(t, rtpPkts[0].marker, "the first packet starts a talkspurt")
		for i, p := range rtpPkts {
			require.Equal(t, side.s.SSRC(), p.ssrc)
			if i > 0 {
				require.Equal(t, (rtpPkts[i-1].seq+1)&0xffff, p.seq, "sequence numbers run by one")
				require.GreaterOrEqual(t, int32(p.ts-rtpPkts[i-1].ts), int32(0))
			}
		}
		require.GreaterOrEqual(t, len(rtcpPkts), 3)
		for _, p := range rtcpPkts {
			require.Equal(t, side.s.SSRC(), p.rtcpSenderSSRC)
			require.Contains(t, p.rtcpTypes, rtcpSDES, "every compound packet carries SDES")
		}
		require.Equal(t, rtcpSR, rtcpPkts[0].rtcpTypes[0], "we send, so we report as a sender")
		require.Contains(t, rtcpPkts[len(rtcpPkts)-1].rtcpTypes, rtcpBYE, "port %d: %+v", side.port, rtcpPkts)
	}

	// a's DTMF: event 7 then 11 (#), each with a marked start, growing
	// durations, three end packets with the final duration, one timestamp
	// per event, and audio before and after.
	type evSummary struct {
		event, packets, ends, finalDur int
		ts                             uint32
		markers                        int
	}
	var evs []evSummary
	for _, p := range pkts {
		if p.src != pa || p.pt != 101 {
			continue
		}
		if len(evs) == 0 || evs[len(evs)-1].ts != p.ts {
			evs = append(evs, evSummary{event: p.event, ts: p.ts})
		}
		e := &evs[len(evs)-1]
		require.Equal(t, e.event, p.event)
		e.packets++
		if p.marker {
			e.markers++
		}
		if p.end {
			e.ends++
			e.finalDur = p.duration
		}
	}
	require.Len(t, evs, 2)
	for i, want := range []int{7, 11} {
		require.Equal(t, want, evs[i].event)
		require.Equal(t, 3, evs[i].ends)
		require.Equal(t, 1, evs[i].markers)
		require.Equal(t, 800, evs[i].finalDur, "100 ms at 8 kHz")
	}
	t.Logf("%d packets decoded by tshark; DTMF events %+v", len(pkts), evs)

	// Wireshark's own stream analysis: no loss, no sequence errors.
	stats, err := exec.CommandContext(ctx, tshark, "-r", file, "-q",
		"-d", fmt.Sprintf("udp.port==%d,rtp", pa), "-d", fmt.Sprintf("udp.port==%d,rtp", pb),
		"-z", "rtp,streams").Output()
	require.NoError(t, err)
	t.Logf("tshark -z rtp,streams:\n%s", stats)
	require.Contains(t, string(stats), fmt.Sprintf("0x%08X", a.SSRC()))
	require.Contains(t, string(stats), fmt.Sprintf("0x%08X", b.SSRC()))
	require.NotContains(t, string(stats), " X ", "a stream with problems")

	// What b reports of a's stream (audio and DTMF) agrees with the
	// capture: every packet received, none lost (DTMF digits were counted
	// as losses: 50 events became 6.8% loss), and the interarrival jitter
	// of the audio packets as RFC 3550 A.8 computes it from the capture
	// times.
	var fromA []wirePkt
	for _, p := range pkts {
		if p.src == pa && p.rtcpTypes == nil {
			fromA = append(fromA, p)
		}
	}
	wireLost := fromA[len(fromA)-1].seq - fromA[0].seq + 1 - len(fromA)
	var streamLost = -1
	for _, line := range strings.Split(string(stats), "\n") {
		if f := strings.Fields(line); strings.Contains(line, fmt.Sprintf("0x%08X", a.SSRC())) {
			for i := range f {
				if strings.HasPrefix(f[i], "(") && strings.HasSuffix(f[i], "%)") {
					streamLost = atoi(f[i-1])
				}
			}
		}
	}
	require.Equal(t, 0, wireLost)
	require.Equal(t, wireLost, streamLost, "tshark's own count")
	require.Equal(t, uint64(len(fromA)), heard.PacketsReceived, "audio and DTMF packets are received packets")
	require.Equal(t, uint64(len(fromA)), heard.PacketsExpected)
	require.Equal(t, uint64(wireLost), heard.PacketsLost)
	require.Zero(t, heard.LossPercent)
	require.Equal(t, uint64(2), heard.DigitsReceived)
	var jitter, prev float64
	have := false
	for _, p := range fromA {
		if p.pt != 0 {
			continue // telephone-event packets repeat their start timestamp
		}
		transit := p.at*8000 - float64(p.ts)
		if have {
			jitter += (math.Abs(transit-prev) - jitter) / 16
		}
		prev, have = transit, true
	}
	wireJitterMs := jitter / 8
	t.Logf("a's stream at b: %d packets, %d lost, jitter %.3f ms; the capture: %d packets, %d lost, jitter %.3f ms",
		heard.PacketsReceived, heard.PacketsLost, heard.JitterMs, len(fromA), wireLost, wireJitterMs)
	// Our arrival times are the pacer's reads, within a tick of the
	// capture's: the two estimates agree within a few milliseconds.
	require.InDelta(t, wireJitterMs, heard.JitterMs, 3)
}

func atoi(s string) int {
	n, _ := strconv.Atoi(strings.TrimSpace(s))
	return n
}

func atou(s string) uint64 {
	s = strings.TrimSpace(s)
	n, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	if !strings.HasPrefix(s, "0x") {
		n, err = strconv.ParseUint(s, 10, 64)
	}
	if err != nil {
		return 0
	}
	return n
}
