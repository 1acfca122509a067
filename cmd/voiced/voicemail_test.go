package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/codecs/wav"
	"github.com/voiced/voiced/media"
	"github.com/voiced/voiced/media/amd/amdtest"
	"github.com/voiced/voiced/sip/siptest"
)

// TestServeVoicemailDetection places outbound calls from POST /v1/call
// to sipp callees that answer and play a pcap (G.711 RTP made here from
// espeak-ng speech): an answering machine's greeting and 1 kHz beep, or
// a person's "Hello?". Per the agent's voicemail action the node hangs up
// on the machine, leaves the message after the beep, or talks to the
// person; voicemail calls end "voicemail" and bill a flat cent, also
// when the machine hangs up before the beep. The
// verdict is in the call's history, and the recording shows the agent
// silent until it.
func TestServeVoicemailDetection(t *testing.T) {
	siptest.Binary(t, "sipp", "sip-tester")
	const rate8 = 8000
	pad := 400 * time.Millisecond
	greeting := amdtest.Speech(t, amdtest.Greeting, "", rate8)
	greetingDur := time.Duration(len(greeting)) * time.Second / rate8
	beepEnd := pad + greetingDur + 300*time.Millisecond + 400*time.Millisecond
	tmp := t.TempDir()
	machine := filepath.Join(tmp, "machine.pcap")
	require.NoError(t, siptest.WritePCMUPcap(machine, amdtest.Concat(amdtest.Silence(pad, rate8), greeting,
		amdtest.Silence(300*time.Millisecond, rate8), amdtest.Tone(1000, 400*time.Millisecond, -12, rate8),
		amdtest.Silence(6*time.Second, rate8))))
	person := filepath.Join(tmp, "person.pcap")
	require.NoError(t, siptest.WritePCMUPcap(person, amdtest.Concat(amdtest.Silence(pad, rate8),
		amdtest.Speech(t, "Hello?", "", rate8), amdtest.Silence(6*time.Second, rate8))))

	// Speech-to-text is a fake at the provider boundary: no words.
	stt := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"text": ""}`)
	}))
	defer stt.Close()
	sv := startTelephonyServe(t, "--call-loopback=false", "--stt-base-url", stt.URL+"/v1")
	// The calls run at once, each to its own sipp and trunk.
	t.Run("calls", func(t *testing.T) { voicemailCalls(t, sv, machine, person, pad, beepEnd) })
	sv.stop(t)
}

func voicemailCalls(t *testing.T, sv *served, machine, person string, pad, beepEnd time.Duration) {
	const message = "Hi, this is the dental clinic. Please call us back."
	const opening = "Hi, this is the dental clinic calling."
	for i, tc := range []struct {
		name     string
		pcap     string
		hangupMS int
		agent    string
		reason   string
		verdict  string
		// decided bounds the verdict, after the answer.
		decidedMin, decidedMax time.Duration
		said                   string // the assistant's one turn
		// gapMin bounds the silence between the end of the callee's
		// audio and the agent's first word, in the recording. The
		// recorder may write the callee's frames up to half a second
		// late when they queue (a loaded machine), so the beep can
		// seem to overlap the message that followed it; a message said
		// at the machine verdict instead would start 5 s too early.
		gapMin time.Duration
	}{
		{name: "hangup", pcap: machine, agent: `"voicemail":{"action":"hangup"}`, reason: "voicemail", verdict: "machine",
			decidedMin: pad + 2*time.Second, decidedMax: pad + 4*time.Second},
		{name: "leave_message", pcap: machine, agent: fmt.Sprintf(`"voicemail":{"action":"leave_message","message":%q}`, message),
			reason: "voicemail", verdict: "beep", decidedMin: beepEnd, decidedMax: beepEnd + time.Second, said: message,
			gapMin: -600 * time.Millisecond},
		{name: "machine_hangs_up", pcap: machine, hangupMS: 5000, reason: "voicemail", verdict: "machine",
			agent:      fmt.Sprintf(`"voicemail":{"action":"leave_message","message":%q}`, message),
			decidedMin: pad + 2*time.Second, decidedMax: pad + 4*time.Second},
		{name: "human", pcap: person, hangupMS: 6000, reason: "callee_hangup", verdict: "human",
			agent:      fmt.Sprintf(`"voicemail":{"action":"hangup"},"outbound_speak_order":"agent_first","first_message":%q`, opening),
			decidedMin: pad + 500*time.Millisecond, decidedMax: pad + 3*time.Second, said: opening},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			scen := renderScenario(t, "uas_pcap.xml", map[string]any{"Pcap": tc.pcap, "HangupMS": tc.hangupMS})
			uas := siptest.Sipp(t, scen, 30*time.Second, "-m", "1")

			number := fmt.Sprintf("+1415555020%d", i)
			st, conn := sv.call("POST", "/v1/voip-connections", fmt.Sprintf(`{"host":"127.0.0.1","port":%d,"codecs":["PCMU"]}`, uas.Port))
			require.Equal(t, 201, st, "%v", conn)
			st, num := sv.call("POST", "/v1/phone-numbers", fmt.Sprintf(`{"source":"voip","number":%q,"voip_connection_id":%d}`, number, objID(conn)))
			require.Equal(t, 201, st, "%v", num)
			st, ag := sv.call("POST", "/v1/agents", fmt.Sprintf(`{"name":"Clinic %s","voice":"espeak:en-us",%s}`, tc.name, tc.agent))
			require.Equal(t, 201, st, "%v", ag)
			time.Sleep(200 * time.Millisecond) // sipp binds its port
			st, out := sv.call("POST", "/v1/call", fmt.Sprintf(`{"agent_id":%d,"from_number":%q,"to_number":"+14155550123"}`, objID(ag), number))
			require.Equal(t, 201, st, "%v", out)
			id := int64(out["call_id"].(float64))
			require.NoError(t, uas.Wait())

			var c map[string]any
			require.Eventually(t, func() bool {
				_, c = sv.call("GET", fmt.Sprintf("/v1/calls/%d", id), "")
				return c["status"] != "in_progress" && c["billed_at"] != nil
			}, 15*time.Second, 50*time.Millisecond)
			require.Equal(t, "completed", c["status"], "%v", c)
			require.Equal(t, tc.reason, c["end_reason"], "%v", c)
			if tc.reason == "voicemail" {
				require.Equal(t, 1.0, c["billing_total_cents"], "voicemail bills a flat cent")
			}

			_, h := sv.call("GET", fmt.Sprintf("/v1/calls/%d/history", id), "")
			var verdict map[string]any
			for _, x := range h["items"].([]any) {
				if it := x.(map[string]any); it["type"] == "machine_detection" {
					verdict = it
				}
			}
			require.NotNil(t, verdict, "history %v", h)
			require.Equal(t, tc.verdict, verdict["text"])
			answerMS, verdictMS := int64(verdict["start_ms"].(float64)), int64(verdict["end_ms"].(float64))
			decided := time.Duration(verdictMS-answerMS) * time.Millisecond
			t.Logf("%s: %s %v after the answer", tc.name, tc.verdict, decided)
			require.GreaterOrEqual(t, decided, tc.decidedMin)
			require.LessOrEqual(t, decided, tc.decidedMax)

			_, tr := sv.call("GET", fmt.Sprintf("/v1/calls/%d/transcript", id), "")
			var said []string
			for _, x := range tr["turns"].([]any) {
				if m := x.(map[string]any); m["role"] == "assistant" {
					said = append(said, m["text"].(string))
				}
			}
			if tc.said == "" {
				require.Empty(t, said)
			} else {
				require.Equal(t, []string{tc.said}, said)
			}

			// The recording (caller left, agent right, paired frame by
			// frame): the agent is silent while the callee's audio plays
			// and, with something to say, speaks once it is over: after
			// the beep, or after "Hello?" and the pause that makes it a
			// person. Wall-clock verdict times are not compared with
			// sample positions: a loaded machine skips frames.
			require.NotNil(t, c["recording_url"])
			rf, err := os.Open(filepath.Join(sv.dir, "blobs", strings.TrimPrefix(c["recording_url"].(string), "blob://")))
			require.NoError(t, err)
			defer rf.Close()
			format, pcm, err := wav.ReadAll(rf)
			require.NoError(t, err)
			require.Equal(t, 2, format.Channels)
			win := format.SampleRate / 10 // 100 ms windows
			var callerLast, agentFirst = -1, -1
			agentLoudest := -200.0
			for k := 0; (k+1)*win*2 <= len(pcm); k++ {
				left, right := make([]int16, win), make([]int16, win)
				for x := range win {
					left[x], right[x] = pcm[2*(k*win+x)], pcm[2*(k*win+x)+1]
				}
				if media.DBFS(left) > -40 {
					callerLast = k
				}
				if l := media.DBFS(right); l > -40 {
					if agentFirst < 0 {
						agentFirst = k
					}
					agentLoudest = max(agentLoudest, l)
				}
			}
			t.Logf("%s: callee audio ends at %d ms, the agent speaks from %d ms (%.1f dBFS)", tc.name, callerLast*100, agentFirst*100, agentLoudest)
			require.GreaterOrEqual(t, callerLast, 0, "the callee's audio is recorded")
			if tc.said == "" {
				require.Equal(t, -1, agentFirst, "the agent never speaks")
				return
			}
			require.Greater(t, agentLoudest, -30.0, "the agent speaks after the verdict")
			gap := time.Duration(agentFirst-callerLast) * 100 * time.Millisecond
			require.Greater(t, gap, tc.gapMin, "the agent waits for the verdict")
			require.Less(t, gap, tc.gapMin+2*time.Second, "then speaks promptly")
		})
	}
}

// renderScenario fills a templated sipp scenario of sip/testdata.
func renderScenario(t *testing.T, name string, data any) string {
	return siptest.Scenario(t, "../../sip/testdata/sipp/"+name+".tmpl", data)
}
