package call

import (
	"fmt"
	"math"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/codecs/wav"
	"github.com/voiced/voiced/media"
	"github.com/voiced/voiced/media/agent"
)

// The listener hears caller and agent summed (saturating); a silent agent
// adds nothing; a slow listener loses frames without holding up the tick
// or the other listener; Close ends every listener and refuses new ones.
func TestTapMixesAndDropsForSlowListeners(t *testing.T) {
	var tap Tap
	tap.Caller(make([]int16, 4)) // no listener: nothing to do
	fast, slow := tap.Listen(8), tap.Listen(1)
	tap.Agent([]int16{100, -100, 30000, -30000}, true)
	tap.Caller([]int16{1, 2, 30000, -30000})
	require.Equal(t, []int16{101, -98, 32767, -32768}, <-fast.C)
	tap.Agent([]int16{5, 5, 5, 5}, false)
	tap.Caller([]int16{7, 7, 7, 7})
	require.Equal(t, []int16{7, 7, 7, 7}, <-fast.C, "a silent agent adds nothing")
	require.Len(t, slow.C, 1, "the slow listener kept its first frame")
	require.EqualValues(t, 1, slow.Dropped(), "and lost the second")
	tap.Stop(slow)
	tap.Stop(slow)
	tap.Close()
	_, open := <-fast.C
	require.False(t, open, "the call's end closes the listener")
	require.Nil(t, tap.Listen(1))
}

// BenchmarkTap is a tick's cost (agent and caller frame, 20 ms at
// 16 kHz) with 0, 1 and 4 listeners that keep up.
func BenchmarkTap(b *testing.B) {
	for _, n := range []int{0, 1, 4} {
		b.Run(map[int]string{0: "listeners=0", 1: "listeners=1", 4: "listeners=4"}[n], func(b *testing.B) {
			var tap Tap
			ls := make([]*Listener, n)
			for i := range ls {
				ls[i] = tap.Listen(4)
			}
			frame := make([]int16, 320)
			b.ReportAllocs()
			for b.Loop() {
				tap.Agent(frame, true)
				tap.Caller(frame)
				for _, l := range ls {
					<-l.C
				}
			}
		})
	}
}

// A realtime session's tap (agent.Session.SetAudioTap, as the realtime
// door's Started hook attaches it) hears both sides at the tap's rate,
// clocked by the pacer's ticks: the caller's speech while the agent is
// silent, then the agent's (a loopback session plays the caller's turn
// back, from its 24 kHz or 8 kHz output) while the caller is silent;
// caller audio sent ahead in a burst is heard at most half a second of
// it, one frame a tick; the call's end closes the listener.
func TestTapHearsRealtimeSession(t *testing.T) {
	speech := loadSpeech(t, "../media/turn/testdata/caller16k.wav")
	for _, out := range []int{media.Rate24k, media.Rate8k} {
		t.Run(fmt.Sprint(out), func(t *testing.T) {
			s, err := agent.New(agent.Config{Loopback: true, OutputRate: out,
				TurnDetection: &agent.TurnDetection{CreateResponse: true}}, nil, agent.Deps{}, nopSink{})
			require.NoError(t, err)
			defer s.Close()
			tap := &Tap{}
			require.NoError(t, s.SetAudioTap(tap))
			require.Error(t, s.SetAudioTap(tap), "one tap a session")
			fn := media.SamplesPerFrame(agent.TapRate(out))
			agentBuf := make([]int16, media.SamplesPerFrame(out))
			tick := func() { s.ReadFrame(agentBuf) }
			in := media.SamplesPerFrame(media.Rate16k)
			silence := make([]int16, in)
			// Nobody listens: the caller's audio is not kept for the tap.
			tone := sineFrames(10, media.Rate16k, 1000)
			for _, f := range tone {
				require.NoError(t, s.WriteFrame(f))
			}
			l := tap.Listen(2000)
			tick()
			require.Zero(t, energy(<-l.C), "audio from before the listener is not heard")
			// The caller speaks in real time: each tick hears its frame.
			var sent, heard float64
			for i := 0; i+in <= len(speech); i += in {
				f := speech[i : i+in]
				require.NoError(t, s.WriteFrame(f))
				tick()
				got := <-l.C
				require.Len(t, got, fn)
				if out == media.Rate24k {
					require.Equal(t, f, got, "the caller's frame as sent, the agent silent")
				}
				sent, heard = sent+energy(f), heard+energy(got)
			}
			require.Greater(t, heard, 0.5*sent*float64(fn)/float64(in), "caller speech")
			// The caller falls silent; the agent plays the turn back.
			loud := 0
			for i := 0; i < 1500 && loud < 20; i++ {
				require.NoError(t, s.WriteFrame(silence))
				tick()
				if e := energy(<-l.C); e > 1e6*float64(fn)/320 {
					loud++
				} else if loud == 0 {
					time.Sleep(time.Millisecond) // the turn's end and the playout are the loop's
				}
			}
			require.Equal(t, 20, loud, "agent frames")
			// The playback ends: both silent for a second.
			for i, quiet := 0, 0; quiet < 50; i++ {
				require.Less(t, i, 3000, "the playback does not end")
				tick()
				if quiet++; energy(<-l.C) > 0 {
					quiet = 0
					time.Sleep(time.Millisecond)
				}
			}
			// A burst of 2 s of caller audio: the ticks hear its last
			// half second, then silence.
			for _, f := range sineFrames(100, media.Rate16k, 500) {
				require.NoError(t, s.WriteFrame(f))
			}
			loud = 0
			for range 60 {
				tick()
				if energy(<-l.C) > 1e6*float64(fn)/320 {
					loud++
				}
			}
			require.InDelta(t, 25, loud, 1, "the backlog heard, one frame a tick")
			require.NoError(t, s.Close())
			tap.Close()
			_, open := <-l.C
			require.False(t, open)
		})
	}
}

func loadSpeech(t *testing.T, path string) []int16 {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	format, pcm, err := wav.ReadAll(f)
	require.NoError(t, err)
	require.Equal(t, 16000, format.SampleRate)
	return pcm
}

// sineFrames is n 20 ms frames of a tone of hz at rate, amplitude 8000.
func sineFrames(n, rate int, hz float64) [][]int16 {
	fn := media.SamplesPerFrame(rate)
	out := make([][]int16, n)
	for i := range out {
		out[i] = make([]int16, fn)
		for j := range out[i] {
			out[i][j] = int16(8000 * math.Sin(2*math.Pi*hz*float64(i*fn+j)/float64(rate)))
		}
	}
	return out
}

func energy(pcm []int16) float64 {
	var e float64
	for _, v := range pcm {
		e += float64(v) * float64(v)
	}
	return e
}

type nopSink struct{}

func (nopSink) Event(agent.Event) {}

// BenchmarkRealtimeTap is a realtime session's tick (ReadFrame of a 24 kHz
// output) and caller frame (WriteFrame, 16 kHz) with no tap, a tap nobody
// listens to, and one listener (the agent's frame resampled to 16 kHz,
// the caller's through the ring, the mix).
func BenchmarkRealtimeTap(b *testing.B) {
	for _, name := range []string{"no tap", "listeners=0", "listeners=1"} {
		b.Run(name, func(b *testing.B) {
			s, err := agent.New(agent.Config{Loopback: true, OutputRate: media.Rate24k}, nil, agent.Deps{}, nopSink{})
			require.NoError(b, err)
			defer s.Close()
			tap := &Tap{}
			if name != "no tap" {
				require.NoError(b, s.SetAudioTap(tap))
			}
			var l *Listener
			if name == "listeners=1" {
				l = tap.Listen(4)
			}
			out, in := make([]int16, media.SamplesPerFrame(media.Rate24k)), sineFrames(1, media.Rate16k, 1000)[0]
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := s.WriteFrame(in); err != nil {
					b.Fatal(err)
				}
				s.ReadFrame(out)
				if l != nil {
					<-l.C
				}
			}
		})
	}
}
