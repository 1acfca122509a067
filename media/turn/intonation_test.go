package turn

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/tts"
	"github.com/voiced/voiced/ai/tts/espeak"
)

func speak(t testing.TB, s *espeak.Synth, text, voice string) []int16 {
	t.Helper()
	a, err := s.Synthesize(context.Background(), tts.Request{Text: text, Voice: voice, SampleRate: 16000})
	require.NoError(t, err)
	p, err := tts.ReadAll(a)
	require.NoError(t, err)
	return p
}

// TestIntonation: espeak-ng, in the six voices of the turn-taking
// scorecard's callers (three female and three male, British, American and
// Scottish), ends a clause followed by a comma level or rising, and a
// statement falling. espeak-ng's rendering of a text depends a little on
// what it said before, so each is said after three different texts. Every
// comma clause must hold (a fall there would end a hesitating caller's
// turn early); the statements may fall short of the bar now and then (the
// turn then waits as for a hold): 12 of 126 here, mostly in the British
// voices, whose statements end within 1.5 semitones of their median.
func TestIntonation(t *testing.T) {
	s, err := espeak.New(espeak.Config{})
	require.NoError(t, err)
	defer s.Close()
	clauses := []string{"I would like to book a table", "Could you move my appointment to", "My account number is four two",
		"I want to change the address", "I would like to book a table for Friday evening", "Please change my delivery address",
		"I need to speak to someone about my bill"}
	var falls, statements int
	for _, before := range []string{"", "hello,", "Good morning."} {
		for _, v := range []string{"en-gb+f3", "en-us+f2", "en-gb-scotland", "en-us+m2", "en-us", "en-gb+m3"} {
			for _, c := range clauses {
				var in Intonation
				if before != "" {
					speak(t, s, before, v)
				}
				in.Write(speak(t, s, c+",", v))
				require.Equal(t, ContourHold, in.Contour(), "%s after %q: %q,", v, before, c)
				in.Reset()
				if before != "" {
					speak(t, s, before, v)
				}
				pcm := speak(t, s, c+".", v)
				in.Write(pcm)
				whole := in.Contour()
				// Any split into writes gives the same contour.
				in.Reset()
				for i := 0; i < len(pcm); i += 333 {
					in.Write(pcm[i:min(len(pcm), i+333)])
				}
				require.Equal(t, whole, in.Contour())
				statements++
				if in.Contour() == ContourFall {
					falls++
				}
			}
		}
	}
	t.Logf("statements falling: %d of %d", falls, statements)
	require.GreaterOrEqual(t, falls, statements*85/100)
	// Too little voice to tell: silence, and a short "okay".
	var in Intonation
	in.Write(make([]int16, 16000))
	require.Equal(t, ContourUnknown, in.Contour())
	in.Write(speak(t, s, "ok", "en-us")[:3200])
	require.Equal(t, ContourUnknown, in.Contour())
}

// TestEndOf: the words decide first; words that can end are final when
// the voice falls or they ask a question, held when a statement's voice
// holds, and merely complete when the voice does not tell.
func TestEndOf(t *testing.T) {
	for _, tc := range []struct {
		words string
		c     Contour
		want  Hint
	}{
		{"", ContourFall, HintUnknown},
		{"i want to book a", ContourFall, HintIncomplete},
		{"i want to book a", ContourHold, HintIncomplete},
		{"i want to book a table", ContourUnknown, HintComplete},
		{"i want to book a table", ContourFall, HintFinal},
		{"i want to book a table", ContourHold, HintHold},
		{"can you tell me when it arrives", ContourHold, HintFinal},
		{"What(2) is my balance", ContourHold, HintFinal},
		{"my balance please", ContourHold, HintHold},
	} {
		require.Equal(t, tc.want, EndOf(tc.words, tc.c), "%q %s", tc.words, tc.c)
	}
	require.Equal(t, "fall", ContourFall.String())
	require.Equal(t, "hold", ContourHold.String())
	require.Equal(t, "unknown", ContourUnknown.String())
}

// BenchmarkIntonation: the pitch tracker's cost per 20 ms of 16 kHz
// speech.
func BenchmarkIntonation(b *testing.B) {
	s, err := espeak.New(espeak.Config{})
	require.NoError(b, err)
	pcm := speak(b, s, "I would like to book a table for Friday evening.", "en-us")
	s.Close()
	pcm = pcm[:len(pcm)/320*320]
	var in Intonation
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		k := i % (len(pcm) / 320)
		if k == 0 {
			in.Reset()
		}
		in.Write(pcm[k*320 : (k+1)*320])
	}
}
