package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/ai/stt"
	"github.com/voiced/voiced/ai/tts"
	"github.com/voiced/voiced/media"
)

// Scenario is what the simulated caller does: the caller-side fields of
// a test scenario (spec 2.12) or a simulation run's prompt.
type Scenario struct {
	// Prompt is who the caller is and what they want; TopicChange, when
	// set, is where the caller steers the conversation from its second
	// turn on.
	Prompt      string
	TopicChange string
	// Accent, Pace ("natural", "slow", "fast") and Disfluencies ("none",
	// "light") shape the caller's speech.
	Accent, Pace, Disfluencies string
	// NoiseAsset ("", "none", "cafe", "street", "car", "office") is mixed
	// into everything the caller sends, SNRDB below its speech.
	NoiseAsset string
	SNRDB      float64
	// SilenceSeconds of silence (noise only, if any) follow the caller's
	// first turn; DTMF is sent right after that turn.
	SilenceSeconds int
	DTMF           string
	// VoicemailAnswer makes the caller a voicemail box: a greeting and a
	// beep, then it records (is silent) until the agent stops.
	VoicemailAnswer bool
}

// Config is one simulated call.
type Config struct {
	Scenario Scenario
	// Model writes the caller's words (scenario prompt, topic change and
	// what the agent said so far); nil: the caller says the prompt once.
	Model llm.Provider
	// TTS speaks them (espeak-ng: the accent's voice, the pace's rate).
	TTS tts.Synthesizer
	// STT, when set, transcribes the agent's turns on channels that carry
	// no transcript (telephony), so the model knows what was said.
	STT stt.Transcriber
	// MaxTurns bounds the caller's turns (0: 4); MaxDuration the call
	// (0: 90 s).
	MaxTurns    int
	MaxDuration time.Duration
	// Seed makes the disfluencies reproducible.
	Seed uint64
	// KeepAudio keeps everything sent, with the clean speech's frames
	// marked (Result.Sent, Result.Speech), for measuring the mix.
	KeepAudio bool
}

// SpeechDBFS is the level the caller's speech is sent at: the RMS of its
// active frames (those not silent), each utterance scaled to it. The noise
// goes SNRDB below, so the SNR is exact on what leaves the caller.
const SpeechDBFS = -20.0

// Line is one thing said in the call, as the caller knows it.
type Line struct {
	Role string        `json:"role"` // "user" is the caller, "assistant" the agent
	Text string        `json:"content"`
	At   time.Duration `json:"-"`
}

// Result is what the simulated caller did.
type Result struct {
	Voice Voice
	Lines []Line
	// DTMF holds the digits sent; DTMFVia how ("rfc4733", "inband").
	DTMF, DTMFVia string
	Start         time.Time
	Duration      time.Duration
	// End is why the call ended, from the caller's side.
	End string
	// CallID is the node's id of the call when the channel says it (web);
	// SIPCallID the SIP Call-ID (telephony).
	CallID    int64
	SIPCallID string
	// Rate, Sent, Speech and Tone (KeepAudio): every sample sent from
	// the media's start, and per 20 ms frame whether clean speech, or an
	// in-band key's tone, was in it (a tone frame is not speech).
	Rate   int
	Sent   []int16
	Speech []bool
	Tone   []bool
	// Telephony: the agent's pacing as the caller received it (arrival
	// times stamped by the kernel), the p50 and p99 of the per-packet
	// transit differences |D| (RFC 3550 A.8, 125 µs steps) over
	// Packets audio packets, and the packets lost on the way.
	PacingP50, PacingP99 time.Duration
	Packets, Lost        uint64
}

// bot is the caller's audio and ears: ReadFrame produces what it sends
// (the queued speech over the noise bed), Heard takes what the agent
// sends. Both run on the media's clock (the pacer worker on telephony,
// the sender loop on web) and only take a short lock.
type bot struct {
	rate, frame int

	mu    sync.Mutex
	queue []int16 // speech not yet sent
	// toneAt and toneLen: the span of queue that is in-band keys' tones
	// (sayTones), not speech.
	toneAt, toneLen int
	drained         chan struct{}
	noise           []float64
	gain            float64
	npos            int
	keep            bool
	sent            []int16
	speech          []bool
	tone            []bool
	started         time.Time

	// The agent: lastVoice is when its last voiced audio will have
	// played (nanoseconds since the Unix epoch), playout when all it sent
	// will have.
	lastVoice atomic.Int64
	playout   int64
	heardMu   sync.Mutex
	heard     []int16 // the agent's audio since the last take, for STT
	heardRate int
}

// bound checks cfg and bounds ctx by the call's longest duration
// (MaxDuration, default 90 s).
func (cfg Config) bound(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if cfg.TTS == nil {
		return nil, nil, errors.New("sim: no TTS")
	}
	d := cfg.MaxDuration
	if d == 0 {
		d = 90 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	return ctx, cancel, nil
}

func newBot(cfg Config, rate int) (*bot, error) {
	b := &bot{rate: rate, frame: rate / 50, heardRate: max(rate, 16000), keep: cfg.KeepAudio, drained: make(chan struct{})}
	close(b.drained)
	s := cfg.Scenario
	if s.NoiseAsset != "" && s.NoiseAsset != "none" {
		a, err := Asset(s.NoiseAsset, rate)
		if err != nil {
			return nil, err
		}
		b.noise = a
		b.gain = 32768 * math.Pow(10, (SpeechDBFS-s.SNRDB)/20)
	}
	return b, nil
}

// ReadFrame fills dst (one 20 ms frame) with speech and noise; false when
// there is neither (the channel sends silence).
func (b *bot) ReadFrame(dst []int16) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started.IsZero() {
		b.started = time.Now()
	}
	n := copy(dst, b.queue)
	clear(dst[n:])
	talking := n > 0
	tone := b.toneLen > 0 && b.toneAt < n
	speech := talking && !tone && media.DBFS(dst[:n]) > -60 // as level counts it
	b.queue = b.queue[n:]
	if b.toneAt -= n; b.toneAt < 0 {
		b.toneLen = max(0, b.toneLen+b.toneAt)
		b.toneAt = 0
	}
	if talking && len(b.queue) == 0 {
		close(b.drained)
	}
	if b.noise != nil {
		for i := range dst {
			v := float64(dst[i]) + b.gain*b.noise[b.npos]
			dst[i] = int16(max(-32768, min(32767, math.Round(v))))
			b.npos = (b.npos + 1) % len(b.noise)
		}
	}
	if b.keep {
		b.sent = append(b.sent, dst...)
		b.speech = append(b.speech, speech)
		b.tone = append(b.tone, tone)
	}
	return talking || b.noise != nil
}

// say queues pcm and returns a channel closed when it has all been sent.
func (b *bot) say(pcm []int16) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.queueLocked(pcm)
}

// queueLocked is say with b.mu held.
func (b *bot) queueLocked(pcm []int16) <-chan struct{} {
	if len(b.queue) == 0 {
		b.drained = make(chan struct{})
	}
	b.queue = append(b.queue, pcm...)
	return b.drained
}

// sayTones is say for in-band keys' tones, which are marked as such.
func (b *bot) sayTones(pcm []int16) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.toneAt, b.toneLen = len(b.queue), len(pcm)
	return b.queueLocked(pcm)
}

// WriteFrame takes the agent's audio as it arrives (rtp.Sink).
func (b *bot) WriteFrame(pcm []int16) error {
	b.hear(pcm, b.heardRate, time.Now())
	return nil
}

// hear notes the agent's audio: arriving at now, it plays after what
// came before it; voiced audio moves lastVoice.
func (b *bot) hear(pcm []int16, rate int, now time.Time) {
	d := int64(len(pcm)) * int64(time.Second) / int64(rate)
	b.heardMu.Lock()
	b.playout = max(b.playout, now.UnixNano()) + d
	if media.DBFS(pcm) > -45 {
		b.lastVoice.Store(b.playout)
		if len(b.heard) < 30*rate {
			b.heard = append(b.heard, pcm...)
		}
	}
	b.heardMu.Unlock()
}

func (b *bot) takeHeard() []int16 {
	b.heardMu.Lock()
	defer b.heardMu.Unlock()
	h := b.heard
	b.heard = nil
	return h
}

// channel is the call the bot is on, whatever carries it.
type channel interface {
	// DTMF sends digits the channel's way and says which way that was.
	DTMF(digits string) (via string, err error)
	// Hangup ends the call from the caller's side.
	Hangup()
	// Done is closed when the call has ended, from either side.
	Done() <-chan struct{}
	// Transcript is the agent's words since the last call, when the
	// channel carries them (web); ok false when it does not.
	Transcript() (text string, ok bool)
}

// converse runs the caller's side of a call on ch until it hangs up or
// the call ends.
func converse(ctx context.Context, cfg Config, b *bot, ch channel, res *Result) {
	s := cfg.Scenario
	maxTurns := cfg.MaxTurns
	if maxTurns == 0 {
		maxTurns = 4
	}
	rnd := rand.New(rand.NewPCG(cfg.Seed, 29))
	t0 := time.Now()
	res.End = "caller_hangup"
	defer ch.Hangup()
	ended := func() bool {
		select {
		case <-ch.Done():
			res.End = "agent_hangup"
			return true
		case <-ctx.Done():
			res.End = "timeout"
			return true
		default:
			return false
		}
	}
	// wait is true once done fires, false when the agent hangs up or the
	// call's time is up first (res.End says which).
	wait := func(done <-chan struct{}) bool {
		select {
		case <-done:
			return true
		case <-ch.Done():
			res.End = "agent_hangup"
		case <-ctx.Done():
			res.End = "timeout"
		}
		return false
	}
	speak := func(text string) bool {
		pcm, err := synthesize(ctx, cfg.TTS, res.Voice, Speed(s.Pace), text, b.rate)
		if err != nil {
			res.End = "error: tts: " + err.Error()
			return false
		}
		res.Lines = append(res.Lines, Line{Role: "user", Text: text, At: time.Since(t0)})
		return wait(b.say(pcm))
	}
	pause := func(d time.Duration) bool {
		elapsed := make(chan struct{})
		t := time.AfterFunc(d, func() { close(elapsed) })
		defer t.Stop()
		return wait(elapsed)
	}
	// listen waits for the agent to speak (within startWithin) and stop
	// (quiet for 800 ms), at most 20 s, and notes what it said.
	listen := func(startWithin time.Duration) bool {
		from := time.Now().UnixNano()
		deadline := time.Now().Add(startWithin)
		for b.lastVoice.Load() < from && time.Now().Before(deadline) {
			if !pause(20 * time.Millisecond) {
				return false
			}
		}
		if b.lastVoice.Load() >= from {
			end := time.Now().Add(20 * time.Second)
			for time.Now().UnixNano()-b.lastVoice.Load() < int64(800*time.Millisecond) && time.Now().Before(end) {
				if !pause(20 * time.Millisecond) {
					return false
				}
			}
		}
		heard := b.takeHeard()
		text, ok := ch.Transcript()
		if !ok && cfg.STT != nil && len(heard) > 0 {
			if r, err := cfg.STT.Transcribe(ctx, stt.Request{PCM: heard, Language: res.Voice.Language}); err == nil {
				text = r.Text
			}
		}
		if text == "" && len(heard) > 0 {
			text = fmt.Sprintf("(the agent spoke for %.1f s)", float64(len(heard))/float64(b.heardRate))
		}
		if text != "" {
			res.Lines = append(res.Lines, Line{Role: "assistant", Text: text, At: time.Since(t0)})
		}
		return true
	}

	if s.VoicemailAnswer {
		greeting := "Hi, you have reached the voicemail of Sam. I can't take your call right now. Please leave a message after the tone."
		if !speak(greeting) || !speak2(b, beep(b.rate), ch, ctx, res) {
			return
		}
		// Record the message: silent until the agent has spoken and
		// stopped, at most 20 s.
		listen(8 * time.Second)
		return
	}
	// The agent usually greets first.
	if !listen(3 * time.Second) {
		return
	}
	for turn := 0; turn < maxTurns; turn++ {
		if ended() {
			return
		}
		text, done, err := nextLine(ctx, cfg, res.Lines, turn)
		if err != nil {
			res.End = "error: model: " + err.Error()
			return
		}
		if text != "" {
			if s.Disfluencies == "light" {
				text = Disfluent(text, rnd)
			}
			if !speak(text) {
				return
			}
		}
		if turn == 0 {
			if s.DTMF != "" {
				if !pause(300 * time.Millisecond) {
					return
				}
				via, err := ch.DTMF(s.DTMF)
				if err != nil {
					res.End = "error: dtmf: " + err.Error()
					return
				}
				res.DTMF, res.DTMFVia = s.DTMF, via
				// 100 ms a digit and 60 ms between, then a margin.
				if !pause(time.Duration(len(s.DTMF))*160*time.Millisecond + 300*time.Millisecond) {
					return
				}
			}
			if s.SilenceSeconds > 0 && !pause(time.Duration(s.SilenceSeconds)*time.Second) {
				return
			}
		}
		if done {
			pause(500 * time.Millisecond)
			return
		}
		if !listen(8 * time.Second) {
			return
		}
	}
}

// speak2 plays raw audio (the voicemail beep) and waits for it.
func speak2(b *bot, pcm []int16, ch channel, ctx context.Context, res *Result) bool {
	select {
	case <-b.say(pcm):
		return true
	case <-ch.Done():
		res.End = "agent_hangup"
	case <-ctx.Done():
		res.End = "timeout"
	}
	return false
}

// beep is a voicemail tone: 1 kHz for half a second at -12 dBFS.
func beep(rate int) []int16 {
	pcm := make([]int16, rate/2)
	for i := range pcm {
		pcm[i] = int16(8192 * math.Sin(2*math.Pi*1000*float64(i)/float64(rate)))
	}
	return pcm
}

// endMark is how the model says the caller's line is its last.
const endMark = "[END]"

// callerRules is the system prompt's frame around the scenario.
const callerRules = "You are role-playing a caller phoning a voice agent, to test it. Stay in character as the caller described below. " +
	"Say only the caller's next line: one or two short spoken sentences, no stage directions. " +
	"When your goal is met or the conversation is over, say goodbye and end the line with " + endMark + "."

// nextLine asks the model for the caller's next line; done is true when
// the model ended the conversation. Without a model the caller says the
// prompt, once.
func nextLine(ctx context.Context, cfg Config, lines []Line, turn int) (text string, done bool, err error) {
	s := cfg.Scenario
	if cfg.Model == nil {
		return s.Prompt, true, nil
	}
	sys := callerRules + "\n\nCaller: " + s.Prompt
	if s.TopicChange != "" && turn >= 1 {
		sys += "\n\nNow change the subject: " + s.TopicChange
	}
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: sys}}
	// The model plays the caller: the agent's lines are its user turns.
	for _, l := range lines {
		role := llm.RoleUser
		if l.Role == "user" {
			role = llm.RoleAssistant
		}
		msgs = append(msgs, llm.Message{Role: role, Content: l.Text})
	}
	if len(lines) == 0 || lines[len(lines)-1].Role == "user" {
		msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: "(the agent is waiting for you to speak)"})
	}
	st, err := cfg.Model.Stream(ctx, llm.Request{Messages: msgs})
	if err != nil {
		return "", false, err
	}
	defer st.Close()
	var sb strings.Builder
	for {
		c, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", false, err
		}
		sb.WriteString(c.Text)
	}
	text = strings.TrimSpace(sb.String())
	if i := strings.Index(text, endMark); i >= 0 {
		text, done = strings.TrimSpace(text[:i]), true
	}
	return text, done, nil
}

// synthesize speaks text in v at speed and returns it at rate, scaled so
// its active frames are at SpeechDBFS.
func synthesize(ctx context.Context, s tts.Synthesizer, v Voice, speed float64, text string, rate int) ([]int16, error) {
	a, err := s.Synthesize(ctx, tts.Request{Text: text, Voice: v.Voice, Language: v.Language, SampleRate: rate, Speed: speed})
	if err != nil {
		return nil, err
	}
	pcm, err := tts.ReadAll(a)
	if err != nil {
		return nil, err
	}
	return level(pcm, rate/50), nil
}

// level scales pcm so the RMS of its active frames (above -60 dBFS) is
// SpeechDBFS, clipping nothing: peaks are limited to full scale.
func level(pcm []int16, frame int) []int16 {
	p, n := activePower(pcm, frame)
	if n == 0 {
		return pcm
	}
	g := 32768 * math.Pow(10, SpeechDBFS/20) / math.Sqrt(p)
	for i, v := range pcm {
		pcm[i] = int16(max(-32768, min(32767, math.Round(float64(v)*g))))
	}
	return pcm
}

// activePower is the mean power of pcm's frames above -60 dBFS and how
// many there are.
func activePower(pcm []int16, frame int) (float64, int) {
	var sum float64
	n := 0
	for i := 0; i+frame <= len(pcm); i += frame {
		f := pcm[i : i+frame]
		if media.DBFS(f) <= -60 {
			continue
		}
		for _, v := range f {
			sum += float64(v) * float64(v)
		}
		n += frame
	}
	if n == 0 {
		return 0, 0
	}
	return sum / float64(n), n / frame
}

// inband renders digits as in-band DTMF tones (ITU-T Q.23 pairs, 100 ms
// each, 60 ms apart) at -10 dBFS per tone: what a browser's microphone
// carries when someone presses keys next to it.
func inband(digits string, rate int) []int16 {
	low := map[rune]float64{'1': 697, '2': 697, '3': 697, 'A': 697, '4': 770, '5': 770, '6': 770, 'B': 770,
		'7': 852, '8': 852, '9': 852, 'C': 852, '*': 941, '0': 941, '#': 941, 'D': 941}
	high := map[rune]float64{'1': 1209, '4': 1209, '7': 1209, '*': 1209, '2': 1336, '5': 1336, '8': 1336, '0': 1336,
		'3': 1477, '6': 1477, '9': 1477, '#': 1477, 'A': 1633, 'B': 1633, 'C': 1633, 'D': 1633}
	var out []int16
	for _, d := range digits {
		for i := 0; i < rate/10; i++ {
			t := float64(i) / float64(rate)
			out = append(out, int16(10362*(math.Sin(2*math.Pi*low[d]*t)+math.Sin(2*math.Pi*high[d]*t))/2))
		}
		out = append(out, make([]int16, rate*6/100)...)
	}
	return out
}
