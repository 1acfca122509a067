package espeak_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/tts"
	"github.com/voiced/voiced/ai/tts/espeak"
	"github.com/voiced/voiced/codecs/resample"
	"github.com/voiced/voiced/codecs/wav"
)

func newSynth(t testing.TB, cfg espeak.Config) *espeak.Synth {
	t.Helper()
	s, err := espeak.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// readAll reads a to the end in 20 ms frames.
func readAll(t testing.TB, a tts.Audio, rate int) []int16 {
	t.Helper()
	var out []int16
	buf := make([]int16, rate/50)
	for {
		n, err := a.Read(buf)
		out = append(out, buf[:n]...)
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
	}
}

func speak(t testing.TB, s *espeak.Synth, r tts.Request) []int16 {
	t.Helper()
	a, err := s.Synthesize(context.Background(), r)
	require.NoError(t, err)
	defer a.Close()
	return readAll(t, a, r.SampleRate)
}

func rmsDBFS(x []int16) float64 {
	var sum float64
	for _, v := range x {
		sum += float64(v) * float64(v)
	}
	return 10 * math.Log10(sum/float64(len(x))/(32768*32768))
}

// cliSpeech runs the espeak-ng command (-z: no pause after the last
// sentence, as the library API gives) and returns its 22050 Hz samples.
func cliSpeech(t *testing.T, voice, text string) []int16 {
	t.Helper()
	out, err := exec.Command("espeak-ng", "-z", "-v", voice, "--stdout", text).Output()
	require.NoError(t, err, "the espeak-ng command (Debian espeak-ng)")
	// Writing to a pipe, the command cannot patch the data size it
	// declared (0x7ffff000): the samples end before it.
	f, samples, err := wav.ReadAll(strings.NewReader(string(out)))
	if !errors.Is(err, wav.ErrTruncated) {
		require.NoError(t, err)
	}
	require.Equal(t, 22050, f.SampleRate)
	return samples
}

// envelope returns the RMS of each 10 ms of x.
func envelope(x []int16, rate int) []float64 {
	step := rate / 100
	var env []float64
	for i := 0; i+step <= len(x); i += step {
		var sum float64
		for _, v := range x[i : i+step] {
			sum += float64(v) * float64(v)
		}
		env = append(env, math.Sqrt(sum/float64(step)))
	}
	return env
}

// similarity is the correlation of the 10 ms envelopes of a and b over
// their common length: 1 for the same speech, whatever the sample-level
// differences.
func similarity(a []int16, rateA int, b []int16, rateB int) float64 {
	ea, eb := envelope(a, rateA), envelope(b, rateB)
	n := min(len(ea), len(eb))
	ea, eb = ea[:n], eb[:n]
	var ma, mb float64
	for i := range n {
		ma += ea[i] / float64(n)
		mb += eb[i] / float64(n)
	}
	var sab, saa, sbb float64
	for i := range n {
		sab += (ea[i] - ma) * (eb[i] - mb)
		saa += (ea[i] - ma) * (ea[i] - ma)
		sbb += (eb[i] - mb) * (eb[i] - mb)
	}
	return sab / math.Sqrt(saa*sbb)
}

// sameSpeech checks that got is the speech of want (same duration within
// 4%, envelopes correlated). espeak-ng is not bit-exact from one request to
// the next within a process: its pitch flutter and noise generators carry
// their phase over, which moves glottal periods and so phoneme ends by a
// few samples each (up to 2% of a sentence measured).
func sameSpeech(t *testing.T, want []int16, wantRate int, got []int16, gotRate int, msg string) {
	t.Helper()
	dw, dg := float64(len(want))/float64(wantRate), float64(len(got))/float64(gotRate)
	require.InEpsilon(t, dw, dg, 0.04, "%s: duration %.3f s, want %.3f s", msg, dg, dw)
	require.Greater(t, similarity(want, wantRate, got, gotRate), 0.9, msg)
}

// TestHelloWorldMatchesTheCommandLine checks the synthesized "hello world"
// at every rate: non-silent, of plausible duration, and the same speech as
// the espeak-ng command's.
func TestHelloWorldMatchesTheCommandLine(t *testing.T) {
	s := newSynth(t, espeak.Config{})
	require.Equal(t, 22050, s.SampleRate())
	ref := cliSpeech(t, "en-us", "hello world")
	for _, rate := range []int{16000, 24000, 8000, 48000} {
		t.Run(fmt.Sprintf("%dHz", rate), func(t *testing.T) {
			got := speak(t, s, tts.Request{Text: "hello world", SampleRate: rate})
			secs := float64(len(got)) / float64(rate)
			t.Logf("%d Hz: %d samples, %.3f s, %.1f dBFS", rate, len(got), secs, rmsDBFS(got))
			require.InDelta(t, 0.75, secs, 0.35, "a plausible duration for two words")
			require.Greater(t, rmsDBFS(got), -30.0, "speech, not silence")
			sameSpeech(t, ref, 22050, got, rate, "against the command")
		})
	}
}

// TestAlignedResampling checks the conversion from espeak-ng's rate: the
// resampler's start-up is dropped and its tail flushed, so the request's
// audio is its 22050 Hz audio converted with no delay and nothing lost.
// The first request of a fresh process is bit-exact with the command line
// (no flutter phase carried over yet), so the check runs in a child process.
func TestAlignedResampling(t *testing.T) {
	if os.Getenv("ESPEAK_ALIGN_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAlignedResampling$", "-test.count=1")
		cmd.Env = append(os.Environ(), "ESPEAK_ALIGN_CHILD=1")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), "PASS")
		return
	}
	ref := cliSpeech(t, "en-us", "hello world")
	s := newSynth(t, espeak.Config{})
	got := speak(t, s, tts.Request{Text: "hello world", SampleRate: 16000})
	r, err := resample.New(22050, 16000, resample.QualityHigh)
	require.NoError(t, err)
	want := make([]int16, r.OutputLen(len(ref))+r.Delay())
	n, err := r.ProcessTo(want, ref)
	require.NoError(t, err)
	m, err := r.Flush(want[n:])
	require.NoError(t, err)
	require.Len(t, got, (len(ref)*16000+22049)/22050)
	require.Equal(t, want[r.Delay():n+m], got)
}

func TestVoicesAndLanguages(t *testing.T) {
	s := newSynth(t, espeak.Config{})
	const text = "good morning, how are you today"
	base := speak(t, s, tts.Request{Text: text, SampleRate: 16000})
	for _, r := range []tts.Request{
		{Voice: "espeak:en-us"}, {Voice: "en-us"}, {Voice: "EN-US"}, {Voice: "gmw/en-US"}, {Language: "en-US"}, {Language: "en_us"},
	} {
		r.Text, r.SampleRate = text, 16000
		sameSpeech(t, base, 16000, speak(t, s, r), 16000, r.Voice+r.Language)
	}
	female := speak(t, s, tts.Request{Text: text, Voice: "espeak:en-us+f3", SampleRate: 16000})
	require.Greater(t, rmsDBFS(female), -30.0)
	require.Greater(t, zeroCrossings(female), zeroCrossings(base)*11/10, "the female variant speaks higher")

	// A language picks the voice that prefers it; a language works as a
	// voice name too, as with espeak-ng -v. (No commas: the first request
	// after a switch of language can pause some 40 ms longer at a comma,
	// which would shift the envelopes compared.)
	const french = "bonjour madame comment allez vous"
	fr := speak(t, s, tts.Request{Text: french, Voice: "espeak:fr-fr", SampleRate: 16000})
	for _, r := range []tts.Request{{Language: "fr-FR"}, {Language: "fr"}, {Voice: "fr"}} {
		r.Text, r.SampleRate = french, 16000
		sameSpeech(t, fr, 16000, speak(t, s, r), 16000, r.Voice+r.Language)
	}
	gb := speak(t, s, tts.Request{Text: text, Voice: "espeak:en", SampleRate: 16000})
	sameSpeech(t, gb, 16000, speak(t, s, tts.Request{Text: text, Voice: "en-gb", SampleRate: 16000}), 16000, "en-gb")
	sameSpeech(t, gb, 16000, speak(t, s, tts.Request{Text: text, Language: "en-GB", SampleRate: 16000}), 16000, "en-GB")

	fast := speak(t, s, tts.Request{Text: "good morning to you all", SampleRate: 16000, Speed: 2})
	slow := speak(t, s, tts.Request{Text: "good morning to you all", SampleRate: 16000, Speed: 1})
	require.Less(t, len(fast), len(slow)*3/4)

	for _, r := range []tts.Request{
		{Text: "x", Voice: "espeak:klingon", SampleRate: 16000},
		{Text: "x", Voice: "en-us+nosuchvariant", SampleRate: 16000},
		{Text: "x", Language: "tlh", SampleRate: 16000},
	} {
		_, err := s.Synthesize(context.Background(), r)
		require.ErrorIs(t, err, espeak.ErrUnknownVoice, "%+v", r)
	}
	_, err := s.Synthesize(context.Background(), tts.Request{Text: "x", SampleRate: 22050})
	require.ErrorIs(t, err, tts.ErrUnsupportedRate)
	_, err = s.Synthesize(context.Background(), tts.Request{Text: "  ", SampleRate: 16000})
	require.ErrorIs(t, err, tts.ErrBadRequest)
	_, err = s.Synthesize(context.Background(), tts.Request{Text: strings.Repeat("a", 5000), SampleRate: 16000})
	require.ErrorIs(t, err, tts.ErrBadRequest)
	_, err = espeak.New(espeak.Config{Voice: "espeak:klingon"})
	require.ErrorIs(t, err, espeak.ErrUnknownVoice)
	_, err = espeak.New(espeak.Config{Rate: 1000})
	require.Error(t, err)
}

func zeroCrossings(x []int16) int {
	n := 0
	for i := 1; i < len(x); i++ {
		if (x[i-1] < 0) != (x[i] < 0) {
			n++
		}
	}
	return n
}

// longText is about 4000 bytes: several minutes of speech.
var longText = strings.Repeat("The committee will meet again on Thursday to review the budget, the schedule and the open questions. ", 39)

// TestStreamsBeforeSynthesisEnds checks that the first audio of a long text
// is readable long before the whole text is synthesized: the first Read
// returns within a small fraction of the time the whole synthesis takes.
func TestStreamsBeforeSynthesisEnds(t *testing.T) {
	s := newSynth(t, espeak.Config{})
	start := time.Now()
	a, err := s.Synthesize(context.Background(), tts.Request{Text: longText, SampleRate: 16000})
	require.NoError(t, err)
	defer a.Close()
	buf := make([]int16, 320)
	n, err := a.Read(buf)
	require.NoError(t, err)
	require.Positive(t, n)
	first := time.Since(start)
	rest := readAll(t, a, 16000)
	total := time.Since(start)
	audio := time.Duration(len(rest)+n) * time.Second / 16000
	t.Logf("first audio after %v, whole text (%v of audio) after %v", first, audio, total)
	require.Greater(t, audio, 2*time.Minute)
	require.Less(t, first, total/5)
}

// TestCloseStopsSynthesis closes a long synthesis after its first frame and
// checks that the synthesizer moves on at once: a short request queued
// right after finishes in a fraction of the time the long one takes whole.
func TestCloseStopsSynthesis(t *testing.T) {
	s := newSynth(t, espeak.Config{})
	whole := time.Now()
	speak(t, s, tts.Request{Text: longText, SampleRate: 16000})
	wholeTime := time.Since(whole)

	for _, how := range []string{"close", "context"} {
		t.Run(how, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			a, err := s.Synthesize(ctx, tts.Request{Text: longText, SampleRate: 16000})
			require.NoError(t, err)
			buf := make([]int16, 320)
			_, err = a.Read(buf)
			require.NoError(t, err)
			start := time.Now()
			if how == "close" {
				require.NoError(t, a.Close())
				_, err = a.Read(buf)
				require.ErrorIs(t, err, tts.ErrClosed)
				require.NoError(t, a.Close(), "Close is idempotent")
			} else {
				// Read fails once the samples already converted (at most
				// one 60 ms buffer) are read.
				cancel()
				after := 0
				for err == nil {
					var n int
					n, err = a.Read(buf)
					after += n
				}
				require.ErrorIs(t, err, context.Canceled)
				require.LessOrEqual(t, after, 16000*60/1000+100)
				require.NoError(t, a.Close())
			}
			short := speak(t, s, tts.Request{Text: "next", SampleRate: 16000})
			after := time.Since(start)
			t.Logf("whole long text %v; after stopping it, a short one done in %v", wholeTime, after)
			require.Less(t, after, wholeTime/3)
			// Nothing of the stopped text leaks into the next request.
			require.InDelta(t, 0.45, float64(len(short))/16000, 0.2, "%d samples", len(short))
		})
	}
}

// TestConcurrentRequests runs requests from several goroutines: each gets
// exactly the audio it gets alone (the library's global state never leaks
// between requests).
func TestConcurrentRequests(t *testing.T) {
	s := newSynth(t, espeak.Config{})
	texts := []string{"one two three four", "five six seven eight", "nine ten eleven twelve", "zero one two three"}
	voices := []string{"en-us", "en-us+f3", "en-gb", "de"}
	want := make([][]int16, len(texts))
	for i := range texts {
		want[i] = speak(t, s, tts.Request{Text: texts[i], Voice: voices[i], SampleRate: 24000})
	}
	var wg sync.WaitGroup
	got := make([][][]int16, len(texts))
	for i := range texts {
		wg.Go(func() {
			for range 3 {
				a, err := s.Synthesize(context.Background(), tts.Request{Text: texts[i], Voice: voices[i], SampleRate: 24000})
				if err != nil {
					t.Error(err)
					return
				}
				var out []int16
				buf := make([]int16, 480)
				for {
					n, err := a.Read(buf)
					out = append(out, buf[:n]...)
					if err != nil {
						break
					}
				}
				_ = a.Close()
				got[i] = append(got[i], out)
			}
		})
	}
	wg.Wait()
	for i := range texts {
		require.Len(t, got[i], 3)
		for _, g := range got[i] {
			sameSpeech(t, want[i], 24000, g, 24000, voices[i]+": "+texts[i])
		}
	}
}

func TestQueueAndClose(t *testing.T) {
	s, err := espeak.New(espeak.Config{Queue: 1})
	require.NoError(t, err)
	long, err := s.Synthesize(context.Background(), tts.Request{Text: longText, SampleRate: 16000})
	require.NoError(t, err)
	buf := make([]int16, 320)
	_, err = long.Read(buf) // the synthesizer is busy with it
	require.NoError(t, err)
	queued, err := s.Synthesize(context.Background(), tts.Request{Text: "waiting", SampleRate: 16000})
	require.NoError(t, err)
	_, err = s.Synthesize(context.Background(), tts.Request{Text: "too many", SampleRate: 16000})
	require.ErrorIs(t, err, espeak.ErrBusy)

	closed := make(chan struct{})
	go func() { _ = s.Close(); close(closed) }()
	_, err = queued.Read(buf)
	require.ErrorIs(t, err, espeak.ErrClosed, "a queued request fails when the synthesizer closes")
	readAll(t, long, 16000) // the running one finishes
	<-closed
	require.NoError(t, s.Close())
	_, err = s.Synthesize(context.Background(), tts.Request{Text: "late", SampleRate: 16000})
	require.ErrorIs(t, err, espeak.ErrClosed)
	require.NoError(t, long.Close())
	require.NoError(t, queued.Close())
}

// TestReadDoesNotAllocatePerSample counts the allocations of a whole
// synthesis read in 20 ms frames: a handful per request (buffers, the
// handle, the C string), none per frame or sample.
func TestReadDoesNotAllocatePerSample(t *testing.T) {
	s := newSynth(t, espeak.Config{})
	req := tts.Request{Text: "The committee will meet again on Thursday to review the budget.", SampleRate: 16000}
	speak(t, s, req) // warm the resampler pool
	buf := make([]int16, 320)
	frames := 0
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	a, err := s.Synthesize(context.Background(), req)
	require.NoError(t, err)
	for {
		_, err := a.Read(buf)
		if err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
		frames++
	}
	require.NoError(t, a.Close())
	runtime.ReadMemStats(&after)
	allocs := after.Mallocs - before.Mallocs
	t.Logf("%d allocations for %d frames", allocs, frames)
	require.Greater(t, frames, 100)
	require.Less(t, allocs, uint64(frames/4))
}
