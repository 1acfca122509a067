package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/voiced/voiced/ai/tts"
	"github.com/voiced/voiced/ai/tts/espeak"
)

// rate is the scorecard's audio rate both ways on the realtime socket
// (audio/pcm at 24 kHz, OpenAI's default), and of every corpus clip.
const rate = 24000

// frame is 20 ms at rate: one input_audio_buffer.append per tick.
const frame = rate / 50

// speechDBFS is the caller's active speech level; noise SNRs are taken
// against it.
const speechDBFS = -26.0

// floorDBFS is the line noise always under the microphone, so the stream
// is never digital silence.
const floorDBFS = -62.0

// kind is what a condition does to a session.
type kind string

const (
	kindEcho        kind = "echo"        // the agent's own audio fed back
	kindBackchannel kind = "backchannel" // "mm-hmm", "okay", "yeah" over the agent
	kindBurst       kind = "burst"       // a cough or a door over the agent
	kindNoise       kind = "noise"       // steady babble or pink noise over the agent
	kindBargeIn     kind = "bargein"     // a real interruption (in quiet or noise)
	kindHesitation  kind = "hesitation"  // a caller turn with a 300-600 ms pause
	kindLatency     kind = "latency"     // clean turns, 10 sessions at once
)

// condition is one row of the scorecard.
type condition struct {
	Name   string  `json:"name"`
	Kind   kind    `json:"kind"`
	EchoDB float64 `json:"echo_db,omitempty"` // echo level relative to the agent's audio
	Noise  string  `json:"noise,omitempty"`   // "babble" or "pink"
	SNR    float64 `json:"snr_db,omitempty"`
	// Turn is the sessions' turn_detection object for this row; empty:
	// -turn-detection's (server_vad's defaults without it).
	Turn string `json:"turn_detection,omitempty"`
}

// semanticAuto is semantic_vad with the eagerness OpenAI's clients send
// by default.
const semanticAuto = `{"type":"semantic_vad","eagerness":"auto"}`

// conditions are the scorecard's rows, in the order of issue 31's goals.
var conditions = []condition{
	{Name: "echo -6 dB", Kind: kindEcho, EchoDB: -6},
	{Name: "echo -10 dB", Kind: kindEcho, EchoDB: -10},
	{Name: "echo -20 dB", Kind: kindEcho, EchoDB: -20},
	{Name: "backchannel", Kind: kindBackchannel},
	{Name: "noise burst", Kind: kindBurst},
	{Name: "babble 10 dB", Kind: kindNoise, Noise: "babble", SNR: 10},
	{Name: "babble 20 dB", Kind: kindNoise, Noise: "babble", SNR: 20},
	{Name: "pink 10 dB", Kind: kindNoise, Noise: "pink", SNR: 10},
	{Name: "pink 20 dB", Kind: kindNoise, Noise: "pink", SNR: 20},
	{Name: "barge-in quiet", Kind: kindBargeIn},
	{Name: "barge-in babble 10 dB", Kind: kindBargeIn, Noise: "babble", SNR: 10},
	{Name: "barge-in pink 10 dB", Kind: kindBargeIn, Noise: "pink", SNR: 10},
	{Name: "hesitation", Kind: kindHesitation},
	{Name: "latency x10", Kind: kindLatency},
	{Name: "semantic hesitation", Kind: kindHesitation, Turn: semanticAuto},
	{Name: "semantic latency x10", Kind: kindLatency, Turn: semanticAuto},
}

// agentTexts are what the agent says (the echo model repeats a text turn).
var agentTexts = []string{
	"Thanks for calling. Your order shipped this morning and should arrive on Thursday between nine and noon.",
	"I can book that for you. We have a table for four at seven thirty, or a quieter one by the window at eight.",
	"Your balance is forty two dollars and sixteen cents, and the next payment is due on the fifth of next month.",
	"Let me check the schedule. The next train leaves at ten past six from platform three and arrives at eight.",
	"Sure, I have changed the delivery address. Is there anything else you would like me to update today?",
}

var callerVoices = []string{"en-gb+f3", "en-us+f2", "en-gb-scotland", "en-us+m2", "en-us", "en-gb+m3"}

var backchannels = []string{"mm-hmm", "okay", "yeah", "uh-huh", "right", "I see"}

var interruptions = []string{
	"Wait, sorry, can we make that Saturday instead?",
	"Hold on, that is not what I asked for.",
	"No no, I meant the other account please.",
	"Excuse me, could you repeat the last part?",
}

// hesitations are caller turns split where a caller pauses to think. The
// first part ends on a comma: a caller who pauses mid-sentence holds the
// floor with a level or rising voice, which espeak-ng gives a clause that
// ends on a comma; without it espeak-ng ends the clause as a finished
// statement, falling 2-6 semitones (media/turn TestIntonation).
var hesitations = [][2]string{
	{"I would like to book a table,", "for Friday evening at seven."},
	{"Could you move my appointment to,", "next Tuesday morning please?"},
	{"My account number is four two,", "seven nine one three."},
	{"I want to change the address,", "to twelve Oak Street."},
}

// cleanTurns are the latency condition's caller turns.
var cleanTurns = []string{
	"I would like to book a table for Friday evening.",
	"Can you tell me when my order will arrive?",
	"Please change my delivery address.",
	"What is the balance on my account?",
	"I need to speak to someone about my bill.",
}

// babbleTexts are what the babble's talkers say, over and over.
var babbleTexts = []string{
	"The meeting moved to the small room on the second floor after lunch.",
	"She said the train was late again so they took a taxi to the station.",
	"We should order more paper before the end of the month and check the printer.",
	"He forgot his keys at the office and had to wait outside for an hour.",
}

var babbleVoices = []string{"en-us+m3", "en-gb+f2", "en-us+f4", "en-gb+m5"}

// item is one trial: everything about it is drawn from the seed, so a
// rerun with the same seed streams the same audio.
type item struct {
	Cond      condition     `json:"-"`
	Index     int           `json:"index"`
	Seed      uint64        `json:"seed"`
	AgentText int           `json:"agent_text"`
	Stim      string        `json:"stimulus,omitempty"` // spoken text or burst name
	StimVoice string        `json:"stimulus_voice,omitempty"`
	At        time.Duration `json:"at"`    // stimulus onset after the agent's first audio
	Delay     time.Duration `json:"delay"` // echo path delay
	Gap       time.Duration `json:"gap"`   // hesitation pause
	Turns     []int         `json:"turns,omitempty"`
}

// items draws n trials of c from seed. Echo delays and hesitation gaps
// are spread evenly over their ranges; the rest is drawn at random.
func items(c condition, n int, seed uint64) []item {
	h := sha256.Sum256([]byte(c.Name))
	r := rand.New(rand.NewPCG(seed, binary.LittleEndian.Uint64(h[:8])))
	out := make([]item, n)
	for i := range out {
		it := item{Cond: c, Index: i, Seed: r.Uint64(), AgentText: r.IntN(len(agentTexts))}
		it.At = time.Duration(1500+r.IntN(1600)) * time.Millisecond
		frac := 0.0
		if n > 1 {
			frac = float64(i) / float64(n-1)
		}
		switch c.Kind {
		case kindEcho:
			it.Delay = time.Duration(frac*300) * time.Millisecond
		case kindBackchannel:
			it.Stim = backchannels[r.IntN(len(backchannels))]
			it.StimVoice = callerVoices[r.IntN(len(callerVoices))]
		case kindBurst:
			it.Stim = []string{"cough", "door"}[i%2]
		case kindBargeIn:
			it.Stim = interruptions[r.IntN(len(interruptions))]
			it.StimVoice = callerVoices[r.IntN(len(callerVoices))]
		case kindHesitation:
			it.Stim = fmt.Sprint(r.IntN(len(hesitations)))
			it.StimVoice = callerVoices[r.IntN(len(callerVoices))]
			it.Gap = time.Duration(300+frac*300) * time.Millisecond
		case kindLatency:
			it.StimVoice = callerVoices[r.IntN(len(callerVoices))]
			it.Turns = []int{r.IntN(len(cleanTurns))}
		}
		out[i] = it
	}
	return out
}

// voices synthesizes text with espeak-ng at rate, once: clips are cached
// as raw PCM under dir, so a rerun does not synthesize again.
type voices struct {
	dir   string
	mu    sync.Mutex
	synth *espeak.Synth
	mem   map[string][]int16
}

func newVoices(dir string) (*voices, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("corpus cache: %w", err)
	}
	return &voices{dir: dir, mem: map[string][]int16{}}, nil
}

// speech returns text spoken by voice, trimmed to its active part and
// scaled to speechDBFS.
func (v *voices) speech(text, voice string) ([]int16, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	key := text + "\x00" + voice
	if p, ok := v.mem[key]; ok {
		return p, nil
	}
	sum := sha256.Sum256([]byte(fmt.Sprint("v1", rate, key)))
	file := filepath.Join(v.dir, hex.EncodeToString(sum[:12])+".pcm")
	if b, err := os.ReadFile(file); err == nil && len(b)%2 == 0 && len(b) > 0 {
		p := make([]int16, len(b)/2)
		for i := range p {
			p[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
		}
		v.mem[key] = p
		return p, nil
	}
	if v.synth == nil {
		s, err := espeak.New(espeak.Config{})
		if err != nil {
			return nil, fmt.Errorf("espeak-ng: %w", err)
		}
		v.synth = s
	}
	a, err := v.synth.Synthesize(context.Background(), tts.Request{Text: text, Voice: voice, SampleRate: rate})
	if err != nil {
		return nil, fmt.Errorf("espeak-ng %q in %s: %w", text, voice, err)
	}
	p, err := tts.ReadAll(a)
	if err != nil {
		return nil, fmt.Errorf("espeak-ng %q: %w", text, err)
	}
	p = trim(p)
	if len(p) == 0 {
		return nil, fmt.Errorf("espeak-ng %q in %s: no audio", text, voice)
	}
	scaleTo(p, speechDBFS)
	b := make([]byte, 2*len(p))
	for i, s := range p {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(s))
	}
	if err := os.WriteFile(file+".tmp", b, 0o644); err == nil {
		_ = os.Rename(file+".tmp", file)
	}
	v.mem[key] = p
	return p, nil
}

// trim cuts leading and trailing frames quieter than -50 dBFS, so a clip
// starts at its onset and ends at its last sound.
func trim(p []int16) []int16 {
	lo, hi := 0, len(p)/frame
	for lo < hi && dbfs(p[lo*frame:(lo+1)*frame]) < -50 {
		lo++
	}
	for hi > lo && dbfs(p[(hi-1)*frame:hi*frame]) < -50 {
		hi--
	}
	return append([]int16(nil), p[lo*frame:hi*frame]...)
}

// dbfs is p's RMS level in dB relative to full scale (-120 for silence).
func dbfs(p []int16) float64 {
	var e float64
	for _, s := range p {
		e += float64(s) * float64(s)
	}
	if len(p) == 0 || e == 0 {
		return -120
	}
	return 10 * math.Log10(e/float64(len(p))/(32768*32768))
}

// activeDBFS is the level over p's frames louder than -50 dBFS: speech's
// level without its pauses.
func activeDBFS(p []float64) float64 {
	var e float64
	var n int
	for i := 0; i+frame <= len(p); i += frame {
		var f float64
		for _, s := range p[i : i+frame] {
			f += s * s
		}
		if 10*math.Log10(f/frame/(32768*32768)+1e-30) > -50 {
			e += f
			n += frame
		}
	}
	if n == 0 {
		return -120
	}
	return 10 * math.Log10(e/float64(n)/(32768*32768))
}

// scaleTo scales speech p so its active level is db.
func scaleTo(p []int16, db float64) {
	f := make([]float64, len(p))
	for i, s := range p {
		f[i] = float64(s)
	}
	g := math.Pow(10, (db-activeDBFS(f))/20)
	for i := range p {
		p[i] = clip(float64(p[i]) * g)
	}
}

func clip(x float64) int16 {
	switch {
	case x > 32767:
		return 32767
	case x < -32768:
		return -32768
	}
	return int16(math.Round(x))
}

// pink is n samples of pink noise (Paul Kellet's filter over white noise)
// at db RMS.
func pink(r *rand.Rand, n int, db float64) []float64 {
	out := make([]float64, n)
	var b0, b1, b2, b3, b4, b5, b6 float64
	var e float64
	for i := range out {
		w := r.NormFloat64()
		b0 = 0.99886*b0 + w*0.0555179
		b1 = 0.99332*b1 + w*0.0750759
		b2 = 0.96900*b2 + w*0.1538520
		b3 = 0.86650*b3 + w*0.3104856
		b4 = 0.55000*b4 + w*0.5329522
		b5 = -0.7616*b5 - w*0.0168980
		out[i] = b0 + b1 + b2 + b3 + b4 + b5 + b6 + w*0.5362
		b6 = w * 0.115926
		e += out[i] * out[i]
	}
	g := math.Pow(10, db/20) * 32768 / math.Sqrt(e/float64(n))
	for i := range out {
		out[i] *= g
	}
	return out
}

// babble is n samples of four espeak-ng talkers at once, each looping its
// sentence from a random point, at db RMS.
func (v *voices) babble(r *rand.Rand, n int, db float64) ([]float64, error) {
	out := make([]float64, n)
	for i, voice := range babbleVoices {
		p, err := v.speech(babbleTexts[i%len(babbleTexts)], voice)
		if err != nil {
			return nil, err
		}
		off := r.IntN(len(p))
		gap := rate / 4 // a quarter second between a talker's loops
		l := len(p) + gap
		for j := range out {
			k := (off + j) % l
			if k < len(p) {
				out[j] += float64(p[k])
			}
		}
	}
	var e float64
	for _, s := range out {
		e += s * s
	}
	g := math.Pow(10, db/20) * 32768 / math.Sqrt(e/float64(n)+1e-9)
	for i := range out {
		out[i] *= g
	}
	return out, nil
}

// burst is a generated non-speech sound at about speechDBFS: "cough" (two
// bursts of band-limited noise with a sharp attack) or "door" (a low thump
// with a click, then the latch).
func burst(r *rand.Rand, name string) []float64 {
	var out []float64
	switch name {
	case "cough":
		out = make([]float64, rate*45/100)
		for _, b := range [][2]float64{{0, 0.22}, {0.26, 0.16}} {
			start, dur := int(b[0]*rate), b[1]
			var lp float64
			for i := 0; i < int(dur*rate) && start+i < len(out); i++ {
				t := float64(i) / rate
				env := (1 - math.Exp(-t/0.006)) * math.Exp(-t/(dur/3))
				w := r.NormFloat64()
				lp += 0.35 * (w - lp) // mostly below about 2 kHz
				out[start+i] += env * (lp + 0.3*w)
			}
		}
	case "door":
		out = make([]float64, rate*6/10)
		for i := range out {
			t := float64(i) / rate
			out[i] = math.Sin(2*math.Pi*70*t)*math.Exp(-t/0.08) + 0.6*r.NormFloat64()*math.Exp(-t/0.01)
			if t > 0.35 {
				u := t - 0.35
				out[i] += 0.5 * r.NormFloat64() * math.Exp(-u/0.008)
			}
		}
	default:
		panic("unknown burst " + name)
	}
	var peak float64
	for i := 0; i+frame <= len(out); i += frame {
		var e float64
		for _, s := range out[i : i+frame] {
			e += s * s
		}
		peak = math.Max(peak, e/frame)
	}
	g := math.Pow(10, speechDBFS/20) * 32768 / math.Sqrt(peak+1e-12)
	for i := range out {
		out[i] *= g
	}
	return out
}
