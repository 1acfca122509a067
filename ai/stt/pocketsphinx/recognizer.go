package pocketsphinx

/*
// Not pkg-config: sphinxbase.pc would also link libsphinxad, and through it
// PulseAudio, which decoding from memory never uses.
#cgo CFLAGS: -I/usr/include/pocketsphinx
#cgo LDFLAGS: -lpocketsphinx -lsphinxbase
#include <stdlib.h>
#include <pocketsphinx.h>

static ps_decoder_t *voiced_ps_init(int argc, char **argv) {
	cmd_ln_t *config = cmd_ln_parse_r(NULL, ps_args(), argc, argv, TRUE);
	if (config == NULL) {
		return NULL;
	}
	ps_decoder_t *ps = ps_init(config);
	cmd_ln_free_r(config);
	return ps;
}

static float voiced_ps_confidence(ps_decoder_t *ps) {
	return (float)logmath_exp(ps_get_logmath(ps), ps_get_prob(ps));
}
*/
import "C"

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/voiced/voiced/ai/stt"
)

// The model of Debian's pocketsphinx-en-us package.
const (
	defaultModelDir = "/usr/share/pocketsphinx/model/en-us/en-us"
	defaultDict     = "/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict"
	defaultLM       = "/usr/share/pocketsphinx/model/en-us/en-us.lm.bin"
)

// padSamples of low noise (250 ms) are decoded before and after every
// segment: the decoder needs some silence around the speech to settle its
// noise floor, and segments can be cut tight. Measured on espeak-made
// sentences, it turns about half of the misrecognized first and last words
// right.
const padSamples = stt.SampleRate / 4

// initMu serializes decoder initialisation (New).
var initMu sync.Mutex

// Config configures a Recognizer. The zero value recognizes open
// American-English speech with the en-us model's language model.
type Config struct {
	// ModelDir is the acoustic model directory; default Debian's
	// /usr/share/pocketsphinx/model/en-us/en-us.
	ModelDir string
	// Dict is the pronunciation dictionary; default the model's
	// cmudict-en-us.dict.
	Dict string
	// LM is the statistical language model for open speech; default the
	// model's en-us.lm.bin. It is not loaded when Grammar or Words is set.
	LM string
	// Grammar is a JSGF grammar (text) that restricts what can be
	// recognized: a menu, yes/no, digits. Its public rule is the top.
	Grammar string
	// Words restricts recognition to any sequence of these words (a
	// grammar built for them): far more accurate than the open language
	// model when the answers are known. Each must be in Dict.
	Words []string
	// NoDither decodes the samples as given. By default each segment gets
	// its own fixed dither of +-1 (see padded): without it, digital
	// silence (exact zeros, as clients send between words) gives frames
	// of minus-infinite log energy that drag the utterance's cepstral
	// mean, and word accuracy on the espeak sentence set falls from 47.9%
	// to 38.2% (en-us voice: 58.3% to 27.1%, TestLanguageModelDither). The decoder's own -dither is
	// not used: its generator runs on across calls, so a segment would
	// decode differently depending on what the decoder decoded before.
	NoDither bool
	// Args are further decoder options as pocketsphinx_continuous takes
	// them, name then value ("-beam", "1e-60"), after voiced's own.
	Args []string
}

// Recognizer is one PocketSphinx decoder. It is safe for concurrent use;
// the decoder is not, so calls are serialized: run several Recognizers to
// decode on several cores (each loads its own copy of the model).
type Recognizer struct {
	// sem is a one-slot semaphore guarding ps and buf: unlike a mutex, a
	// waiter can give up when its context ends.
	sem    chan struct{}
	ps     *C.ps_decoder_t
	dither bool
	// grammar is set in grammar mode, where the decoder gives no usable
	// posterior probability.
	grammar bool
	// buf holds padding, segment, padding; it only grows.
	buf []int16
	// cmnInit is the model's cepstral mean (-cmninit), the start of each
	// stream's running mean (cmnBegin); nil until the first stream.
	cmnInit []C.float
}

// New loads the model and returns a Recognizer (see the package doc for
// the time and memory it takes). It fails with ErrModel when the model
// does not load or the grammar does not parse, and with ErrUnknownWord for
// a word of Config.Words that the dictionary lacks.
func New(cfg Config) (*Recognizer, error) {
	if cfg.ModelDir == "" {
		cfg.ModelDir = defaultModelDir
	}
	if cfg.Dict == "" {
		cfg.Dict = defaultDict
	}
	grammar := cfg.Grammar
	if grammar == "" && len(cfg.Words) > 0 {
		grammar = wordsGrammar(cfg.Words)
	}
	args := []string{"pocketsphinx", "-hmm", cfg.ModelDir, "-dict", cfg.Dict, "-logfn", "/dev/null", "-samprate", "16000"}
	args = append(args, cfg.Args...)
	if grammar == "" {
		if cfg.LM == "" {
			cfg.LM = defaultLM
		}
		args = append(args, "-lm", cfg.LM)
	}
	argv := make([]*C.char, len(args))
	for i, a := range args {
		argv[i] = C.CString(a)
	}
	defer func() {
		for _, p := range argv {
			C.free(unsafe.Pointer(p))
		}
	}()
	// argv is C memory holding C pointers: passing it is allowed.
	cargv := (**C.char)(C.malloc(C.size_t(len(argv)) * C.size_t(unsafe.Sizeof(argv[0]))))
	defer C.free(unsafe.Pointer(cargv))
	copy(unsafe.Slice(cargv, len(argv)), argv)
	// PocketSphinx's initialisation is not safe to run twice at once
	// (its configuration and logging are process-wide): two loads in
	// parallel hang in ps_init. Loads are serialized; decoding is not.
	initMu.Lock()
	var ps *C.ps_decoder_t
	onDecodeThread(func() { ps = C.voiced_ps_init(C.int(len(argv)), cargv) })
	initMu.Unlock()
	if ps == nil {
		return nil, fmt.Errorf("%w: model %s, dictionary %s, language model %q", ErrModel, cfg.ModelDir, cfg.Dict, cfg.LM)
	}
	r := &Recognizer{ps: ps, sem: make(chan struct{}, 1), grammar: grammar != "", dither: !cfg.NoDither}
	if grammar != "" {
		for _, w := range cfg.Words {
			cw := C.CString(strings.ToLower(w))
			p := C.ps_lookup_word(ps, cw)
			C.free(unsafe.Pointer(cw))
			if p == nil {
				C.ps_free(ps)
				return nil, fmt.Errorf("%w: %q", ErrUnknownWord, w)
			}
			C.free(unsafe.Pointer(p))
		}
		name, cg := C.CString("grammar"), C.CString(grammar)
		defer C.free(unsafe.Pointer(name))
		defer C.free(unsafe.Pointer(cg))
		if C.ps_set_jsgf_string(ps, name, cg) != 0 || C.ps_set_search(ps, name) != 0 {
			C.ps_free(ps)
			return nil, fmt.Errorf("%w: the grammar does not parse or uses words not in the dictionary", ErrModel)
		}
	}
	return r, nil
}

// wordsGrammar is a JSGF grammar accepting any sequence of words, or none
// (silence or noise is no words).
func wordsGrammar(words []string) string {
	var b strings.Builder
	b.WriteString("#JSGF V1.0;\ngrammar words;\npublic <utterance> = ( ")
	for i, w := range words {
		if i > 0 {
			b.WriteString(" | ")
		}
		b.WriteString(strings.ToLower(w))
	}
	b.WriteString(" )* ;\n")
	return b.String()
}

// Transcribe decodes one segment. r.Language and r.Prompt are ignored (the
// model is the one loaded). The segment is decoded as one utterance (its
// cepstral mean taken over all of it, which recognizes short segments far
// better than a running mean), so ctx is checked before decoding starts,
// not during it: decoding takes 0.1 to 0.4 times the segment's duration
// with the language model and about 0.02 times with a grammar
// (BenchmarkSTTPocketsphinx). Confidence is the decoder's posterior
// probability of the hypothesis with the language model, and 0 (unknown)
// with a grammar, where the decoder does not compute it.
func (p *Recognizer) Transcribe(ctx context.Context, r stt.Request) (stt.Result, error) {
	if len(r.PCM) == 0 {
		return stt.Result{}, stt.ErrNoAudio
	}
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return stt.Result{}, context.Cause(ctx)
	}
	defer func() { <-p.sem }()
	if p.ps == nil {
		return stt.Result{}, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return stt.Result{}, context.Cause(ctx)
	}
	if p.cmnInit != nil {
		// The decoder has streamed, and libpocketsphinx then keeps a
		// running cepstral mean for good: decode as a stream, whose mean
		// follows the segment (cmnBegin).
		return p.transcribeStreamed(ctx, r.PCM)
	}
	p.buf = padded(p.buf, r.PCM, p.dither)
	var err error
	onDecodeThread(func() {
		if C.ps_start_utt(p.ps) != 0 {
			err = fmt.Errorf("%w: start of utterance", ErrDecode)
			return
		}
		// The samples are Go memory without pointers, only read during the call.
		if C.ps_process_raw(p.ps, (*C.int16)(unsafe.Pointer(&p.buf[0])), C.size_t(len(p.buf)), 0, 1) < 0 {
			C.ps_end_utt(p.ps)
			err = fmt.Errorf("%w: %d samples", ErrDecode, len(r.PCM))
			return
		}
		if C.ps_end_utt(p.ps) != 0 {
			err = fmt.Errorf("%w: end of utterance", ErrDecode)
		}
	})
	if err != nil {
		return stt.Result{}, err
	}
	return p.result(), nil
}

// result is the finished utterance's hypothesis.
func (p *Recognizer) result() stt.Result {
	var score C.int32
	hyp := C.ps_get_hyp(p.ps, &score)
	if hyp == nil {
		return stt.Result{}
	}
	text := strings.Join(strings.Fields(C.GoString(hyp)), " ")
	if text == "" {
		return stt.Result{}
	}
	res := stt.Result{Text: text}
	if !p.grammar {
		res.Confidence = float32(C.voiced_ps_confidence(p.ps))
	}
	return res
}

// padded returns buf (grown if needed) holding padSamples of low noise,
// pcm (dithered with -1, 0 or +1 per sample if dither), and padSamples of
// noise again. The noise and dither are fixed sequences, restarted for
// every segment, so decoding is deterministic.
func padded(buf, pcm []int16, dither bool) []int16 {
	n := 2*padSamples + len(pcm)
	if cap(buf) < n {
		buf = make([]int16, n)
	}
	buf = buf[:n]
	g := newNoise()
	g.pad(buf[:padSamples], buf[n-padSamples:])
	copy(buf[padSamples:], pcm)
	if dither {
		g.dither(buf[padSamples:padSamples+len(pcm)], pcm)
	}
	return buf
}

// noise is the fixed pseudo-random sequence of the padding and the
// dither: xorshift32, cheap, with no global state.
type noise struct{ x uint32 }

func newNoise() noise { return noise{x: 2463534242} }

func (g *noise) next() uint32 {
	g.x ^= g.x << 13
	g.x ^= g.x >> 17
	g.x ^= g.x << 5
	return g.x
}

// pad fills head with low noise (+-8) and tail, back to front, with its
// negation (tail may be nil).
func (g *noise) pad(head, tail []int16) {
	for i := range head {
		v := int16(g.next()%17) - 8
		head[i] = v
		if tail != nil {
			tail[len(tail)-1-i] = -v
		}
	}
}

// dither writes pcm plus -1, 0 or +1 per sample to dst.
func (g *noise) dither(dst, pcm []int16) {
	for i, v := range pcm {
		dst[i] = int16(max(-32768, min(32767, int32(v)+int32(g.next()%3)-1)))
	}
}

// Close frees the decoder and its model. Later Transcribe calls fail with
// ErrClosed. Close waits for a Transcribe in progress and is idempotent.
func (p *Recognizer) Close() error {
	p.sem <- struct{}{}
	defer func() { <-p.sem }()
	if p.ps != nil {
		onDecodeThread(func() { C.ps_free(p.ps) })
		p.ps = nil
	}
	return nil
}
