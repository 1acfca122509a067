package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/codecs/wav"
	"github.com/voiced/voiced/sip/siptest"
)

// TestSippLoad: sipp places concurrent calls with RTP against one node
// whose number has the audio-loopback agent (the whole media path:
// jitter buffer, decode, resample, VAD and turn detection, recording,
// playout, encode, the node pacer). Every call must complete, and the
// node's own per-call quality must show loss under 0.1%. It logs CPU per
// call and the pacer's tick lateness (the node's outbound pacing jitter).
//
// make test runs 40 calls at 20 calls/s held 5 s; the load run is
// VOICED_SIPP_LOAD_CALLS=200 VOICED_SIPP_LOAD_HOLD=20s (make bench).
func TestSippLoad(t *testing.T) {
	calls, hold := 40, 5*time.Second
	if v := os.Getenv("VOICED_SIPP_LOAD_CALLS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "VOICED_SIPP_LOAD_CALLS")
		calls = n
	}
	if v := os.Getenv("VOICED_SIPP_LOAD_HOLD"); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err, "VOICED_SIPP_LOAD_HOLD")
		hold = d
	}
	const rate = 20 // calls per second

	pcap := speechPcap(t)
	scenario := renderScenario(t, "uac_load.xml", struct{ Pcap string }{pcap})

	sv := startTelephonyServe(t, "--sip-trusted", "127.0.0.1", "--dev-credit-cents", "100000000", "--access-log=false")
	st, conn := sv.call("POST", "/v1/voip-connections", `{"host":"127.0.0.1","allowed_inbound_addresses":["127.0.0.1"],"codecs":["PCMU"]}`)
	require.Equal(t, 201, st, "%v", conn)
	st, ag := sv.call("POST", "/v1/agents", `{"name":"Loopback"}`)
	require.Equal(t, 201, st, "%v", ag)
	st, num := sv.call("POST", "/v1/phone-numbers", fmt.Sprintf(`{"source":"voip","number":"+14155550100","voip_connection_id":%d}`, objID(conn)))
	require.Equal(t, 201, st, "%v", num)
	st, _ = sv.call("PATCH", fmt.Sprintf("/v1/phone-numbers/%d", objID(num)), fmt.Sprintf(`{"inbound_agent_id":%d}`, objID(ag)))
	require.Equal(t, 200, st)

	cpu0, wall0 := processCPU(t), time.Now()
	ramp := time.Duration(calls) * time.Second / rate
	p := siptest.Sipp(t, scenario, ramp+hold+60*time.Second, "-s", "+14155550100", "-m", strconv.Itoa(calls), "-r", strconv.Itoa(rate),
		"-l", strconv.Itoa(calls), "-d", strconv.Itoa(int(hold/time.Millisecond)), "127.0.0.1:"+strconv.Itoa(sv.sipPort))
	require.NoError(t, p.Wait(), "sipp: every call completes")
	cpu, wall := processCPU(t)-cpu0, time.Since(wall0)
	m := scrape(t, sv.base)

	// The node's own records: every call completed, and its quality.
	var results []map[string]any
	require.Eventually(t, func() bool {
		results = results[:0]
		for off := 0; ; off += 100 {
			_, list := sv.call("GET", fmt.Sprintf("/v1/calls?direction=inbound&limit=100&offset=%d", off), "")
			rs, _ := list["results"].([]any)
			for _, r := range rs {
				c := r.(map[string]any)
				if c["status"] == "in_progress" {
					return false
				}
				results = append(results, c)
			}
			if len(rs) < 100 {
				return len(results) == calls
			}
		}
	}, 30*time.Second, 200*time.Millisecond)
	var expected, lost, received, sent float64
	var callSeconds float64
	var jitters []float64
	for _, c := range results {
		require.Equal(t, "completed", c["status"], "%v", c)
		require.Equal(t, "caller_hangup", c["end_reason"], "%v", c)
		q, ok := c["quality"].(map[string]any)
		require.True(t, ok, "call %v has its quality", c["call_id"])
		require.Equal(t, "PCMU", q["codec"])
		lost += q["packets_lost"].(float64)
		received += q["packets_received"].(float64)
		expected += q["packets_received"].(float64) + q["packets_lost"].(float64)
		sent += q["packets_sent"].(float64)
		jitters = append(jitters, q["jitter_ms"].(float64))
		callSeconds += c["duration_seconds"].(float64)
	}
	slices.Sort(jitters)
	lossPct := 100 * lost / max(expected, 1)
	t.Logf("%d calls at %d/s held %v in %v: packets in %.0f (expected %.0f, lost %.0f = %.3f%%), out %.0f; caller jitter p50 %.2f ms, p99 %.2f ms",
		calls, rate, hold, wall.Round(time.Millisecond), received, expected, lost, lossPct, sent, jitters[len(jitters)/2], jitters[len(jitters)*99/100])
	t.Logf("node CPU %v over %.0f call-seconds: %.2f ms CPU per call-second (%.1f%% of one core per call); pacer tick lateness p50 %.3f ms, p99 %.3f ms, max %.3f ms",
		cpu.Round(time.Millisecond), callSeconds, float64(cpu.Milliseconds())/callSeconds, 100*cpu.Seconds()/callSeconds,
		m[seriesLateP50]*1e3, m[seriesLateP99]*1e3, m[seriesLateMax]*1e3)
	require.Greater(t, received, float64(calls)*hold.Seconds()*25, "the callers' RTP reached the node")
	require.Greater(t, sent, 0.0, "the loopback agent answered")
	require.Less(t, lossPct, 0.1, "the node's own loss figure")
	sv.stop(t)
}

// processCPU is the user and system CPU time this process has used: the
// node under test runs in it.
func processCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// speechPcap writes the load callers' audio: a sentence, two seconds of
// pause, four times (turns for the loopback agent to play back), as PCMU
// RTP in a pcap for sipp's play_pcap_audio.
func speechPcap(t testing.TB) string {
	t.Helper()
	espeak := siptest.Binary(t, "espeak-ng", "espeak-ng")
	soxBin := siptest.Binary(t, "sox", "sox")
	tmp := t.TempDir()
	raw, seg := filepath.Join(tmp, "raw.wav"), filepath.Join(tmp, "seg.wav")
	out, err := exec.Command(espeak, "-w", raw, "Hello, I would like to book a table for two tonight.").CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command(soxBin, raw, "-r", "8000", "-c", "1", "-b", "16", seg, "pad", "0", "2", "repeat", "3").CombinedOutput()
	require.NoError(t, err, "%s", out)
	f, err := os.Open(seg)
	require.NoError(t, err)
	_, pcm, err := wav.ReadAll(f)
	f.Close()
	require.NoError(t, err)
	pcap := filepath.Join(tmp, "speech.pcap")
	require.NoError(t, siptest.WritePCMUPcap(pcap, pcm))
	return pcap
}
