package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/codecs/g711"
	"github.com/voiced/voiced/codecs/pcm"
	"github.com/voiced/voiced/codecs/resample"
	"github.com/voiced/voiced/codecs/wav"
	"github.com/voiced/voiced/storage/sqltest"
)

// The published OpenAI Realtime clients (the `openai` npm package and
// `@openai/agents-realtime`, pinned in media/realtime/testdata/npm) drive a
// real `voiced serve` on loopback: text and espeak-ng speech in, audio,
// transcripts and response.done out. Speech-to-text is faked at the
// provider boundary by a server speaking OpenAI's transcription protocol;
// the model is the offline echo, the voice espeak-ng.

const npmDir = "../../media/realtime/testdata/npm"

const heard = "I would like to book a table for Friday evening."

// npmReady installs the pinned clients (npm ci) unless they already are.
func npmReady(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			sqltest.Unavailable(t, tool, err)
		}
	}
	lock, err := os.ReadFile(filepath.Join(npmDir, "package-lock.json"))
	require.NoError(t, err)
	stamp := filepath.Join(npmDir, "node_modules", ".voiced-lock")
	if old, err := os.ReadFile(stamp); err == nil && string(old) == string(lock) {
		return
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = npmDir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "npm ci: %s", out)
	require.NoError(t, os.WriteFile(stamp, lock, 0o644))
}

// fakeTranscriber speaks OpenAI's transcription protocol and hears the
// same sentence in every segment of real audio; asked to stream
// (stream=true), it answers server-sent events as gpt-4o-transcribe does.
func fakeTranscriber(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/audio/transcriptions" {
			http.NotFound(w, r)
			return
		}
		f, _, err := r.FormFile("file")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		defer f.Close()
		format, samples, err := wav.ReadAll(f)
		if err != nil || format.SampleRate != 16000 || len(samples) < 16000 {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"text":""}`))
			return
		}
		if r.FormValue("stream") == "true" {
			// gpt-4o-transcribe's streamed answer: a delta per word, then
			// the transcript.
			w.Header().Set("Content-Type", "text/event-stream")
			for i, word := range strings.Fields(heard) {
				if i > 0 {
					word = " " + word
				}
				b, _ := json.Marshal(map[string]string{"type": "transcript.text.delta", "delta": word})
				_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
				w.(http.Flusher).Flush()
			}
			b, _ := json.Marshal(map[string]string{"type": "transcript.text.done", "text": heard})
			_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"text": heard})
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// speechFiles writes the espeak-ng caller recording, with a second of
// silence before and after, as raw PCM16 at 24 kHz, µ-law and A-law.
func speechFiles(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open("../../media/turn/testdata/caller16k.wav")
	require.NoError(t, err)
	defer f.Close()
	_, speech, err := wav.ReadAll(f)
	require.NoError(t, err)
	sig := append(append(make([]int16, 16000), speech...), make([]int16, 24000)...)
	convert := func(rate int) []int16 {
		rs, err := resample.New(16000, rate, resample.QualityHigh)
		require.NoError(t, err)
		defer rs.Close()
		out := make([]int16, 0, len(sig)*rate/16000)
		buf := make([]int16, rate/50)
		for i := 0; i+320 <= len(sig); i += 320 {
			n, err := rs.ProcessTo(buf, sig[i:i+320])
			require.NoError(t, err)
			out = append(out, buf[:n]...)
		}
		return out
	}
	dir := t.TempDir()
	files := map[string]string{}
	s24, s8 := convert(24000), convert(8000)
	b := make([]byte, 2*len(s24))
	pcm.Int16ToBytesTo(b, s24)
	files["pcm16"] = filepath.Join(dir, "speech24k.raw")
	require.NoError(t, os.WriteFile(files["pcm16"], b, 0o644))
	u := make([]byte, len(s8))
	g711.EncodeULawTo(u, s8)
	files["pcmu"] = filepath.Join(dir, "speech.ulaw")
	require.NoError(t, os.WriteFile(files["pcmu"], u, 0o644))
	a := make([]byte, len(s8))
	g711.EncodeALawTo(a, s8)
	files["pcma"] = filepath.Join(dir, "speech.alaw")
	require.NoError(t, os.WriteFile(files["pcma"], a, 0o644))
	return files
}

// startServe runs `voiced serve` in-process and returns its address and
// first API key.
func startServe(t *testing.T, extra ...string) (addr, key string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuf
	done := make(chan error, 1)
	args := append([]string{"serve", "--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:0", "--sip-addr", "127.0.0.1:0",
		"--rtp-ports", "31000-31100", "--access-log=false"}, extra...)
	go func() { done <- run(ctx, args, &stdout, &stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	})
	addrRe := regexp.MustCompile(`msg=serving http_addr=(127\.0\.0\.1:\d+)`)
	require.Eventually(t, func() bool {
		m := addrRe.FindStringSubmatch(stderr.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	}, 20*time.Second, 20*time.Millisecond, "stderr: %s", stderr.String())
	key = regexp.MustCompile(`sk_live_[0-9a-f]+`).FindString(stdout.String())
	require.NotEmpty(t, key)
	return addr, key
}

// node runs a client script and decodes the JSON it prints.
func node(t *testing.T, out any, script string, args ...string) {
	t.Helper()
	cmd := exec.Command("node", append([]string{script}, args...)...)
	cmd.Dir = npmDir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	require.NoError(t, err, "node %s: %s\n%s", script, b, stderr.String())
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), out), "output: %s\n%s", b, stderr.String())
}

func TestPublishedRealtimeClients(t *testing.T) {
	npmReady(t)
	// A model OpenAI streams: the caller's words come back as
	// transcription deltas, which the clients must take.
	addr, key := startServe(t, "--stt-base-url", fakeTranscriber(t), "--stt-model", "gpt-4o-transcribe")
	files := speechFiles(t)

	// The four clients run at once, each its own call.
	t.Run("clients", func(t *testing.T) {
		for _, format := range []string{"pcm16", "pcmu", "pcma"} {
			t.Run("openai "+format, func(t *testing.T) {
				t.Parallel()
				openaiClient(t, addr, key, format, files[format])
			})
		}
		t.Run("agents sdk", func(t *testing.T) {
			t.Parallel()
			agentsClient(t, addr, key, files["pcm16"])
		})
	})

	// Every session was a web call with its transcript.
	req, _ := http.NewRequest("GET", "http://"+addr+"/v1/calls?direction=web", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	var calls struct {
		Results []map[string]any `json:"results"`
	}
	require.Eventually(t, func() bool {
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.NoError(t, json.Unmarshal(b, &calls))
		for _, c := range calls.Results {
			if c["status"] != "completed" {
				return false
			}
		}
		return len(calls.Results) == 4
	}, 10*time.Second, 50*time.Millisecond)
	for _, c := range calls.Results {
		require.Equal(t, "web", c["direction"])
		require.NotNil(t, c["recording_url"])
		// A WebSocket session's quality is the agent's response latency;
		// it carries no RTP to measure. The text turn is answered for
		// sure; the spoken one counts only when the client's audio kept
		// pace with the clock (these clients send files faster, so the
		// caller's turn "ends" after the answer began: docs/decisions.md).
		q, ok := c["quality"].(map[string]any)
		require.True(t, ok, "%v", c)
		require.Nil(t, q["packets_received"])
		require.Nil(t, q["mos"])
		requireAnswered(t, q)
		require.LessOrEqual(t, q["response_latency_ms"].(map[string]any)["turns"], 2.0, "%v", q)
	}
}

type clientResponse struct {
	ID         string `json:"id"`
	Status     string `json:"status"`
	AudioBytes int    `json:"audioBytes"`
	Transcript string `json:"transcript"`
}

// openaiClient runs the `openai` package's client in one format.
func openaiClient(t *testing.T, addr, key, format, file string) {
	var out struct {
		SessionUpdated  bool             `json:"sessionUpdated"`
		Responses       []clientResponse `json:"responses"`
		UserTranscripts []string         `json:"userTranscripts"`
		SpeechStarted   int              `json:"speechStarted"`
		SpeechStopped   int              `json:"speechStopped"`
		Errors          []string         `json:"errors"`
		Deltas          []struct {
			ItemID string `json:"item_id"`
			Delta  string `json:"delta"`
		} `json:"userDeltas"`
		TranscribedItem string `json:"transcribedItem"`
		LateDeltas      int    `json:"lateDeltas"`
	}
	node(t, &out, "openai_client.mjs", "http://"+addr, key, format, file)
	require.Empty(t, out.Errors)
	require.True(t, out.SessionUpdated)
	require.Len(t, out.Responses, 2)
	// The text turn: the echo model repeats it in espeak-ng's voice.
	require.Equal(t, "completed", out.Responses[0].Status)
	require.Equal(t, "Hello from the openai client.", out.Responses[0].Transcript)
	require.Greater(t, out.Responses[0].AudioBytes, 8000, "at least half a second of speech")
	// The spoken turn: detected, transcribed, answered.
	require.Equal(t, 1, out.SpeechStarted)
	require.Equal(t, 1, out.SpeechStopped)
	require.Equal(t, []string{heard}, out.UserTranscripts)
	// Its words streamed as deltas (a word each, as the STT sent them)
	// for the caller's item, before the completed transcript they make.
	var words string
	for _, d := range out.Deltas {
		require.Equal(t, out.TranscribedItem, d.ItemID)
		words += d.Delta
	}
	require.Len(t, out.Deltas, len(strings.Fields(heard)))
	require.Equal(t, heard, words)
	require.Zero(t, out.LateDeltas)
	require.Equal(t, "completed", out.Responses[1].Status)
	require.Equal(t, heard, out.Responses[1].Transcript)
	require.Greater(t, out.Responses[1].AudioBytes, out.Responses[0].AudioBytes)
}

// agentsClient runs `@openai/agents-realtime`.
func agentsClient(t *testing.T, addr, key, file string) {
	var out struct {
		Connected            bool             `json:"connected"`
		AudioBytes           int              `json:"audioBytes"`
		Responses            []clientResponse `json:"responses"`
		UserTranscripts      []string         `json:"userTranscripts"`
		AssistantTranscripts []string         `json:"assistantTranscripts"`
		Errors               []string         `json:"errors"`
		Types                map[string]int   `json:"types"`
	}
	node(t, &out, "agents_client.mjs", "ws://"+addr+"/v1/realtime", key, file)
	require.Empty(t, out.Errors, "events: %v", out.Types)
	require.True(t, out.Connected)
	require.Len(t, out.Responses, 2)
	require.Equal(t, "completed", out.Responses[0].Status)
	require.Equal(t, "completed", out.Responses[1].Status)
	require.Greater(t, out.Responses[0].AudioBytes, 24000)
	require.Greater(t, out.Responses[1].AudioBytes, out.Responses[0].AudioBytes)
	require.Equal(t, []string{heard}, out.UserTranscripts)
	require.Equal(t, []string{"Hello from the agents SDK.", heard}, out.AssistantTranscripts)
	require.Positive(t, out.Types["input_audio_buffer.speech_started"])
	require.Equal(t, len(strings.Fields(heard)), out.Types["conversation.item.input_audio_transcription.delta"], "events: %v", out.Types)
}
