package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/ai/stt"
	"github.com/voiced/voiced/codecs/resample"
	"github.com/voiced/voiced/media"
)

// noteKind says what a note reports to the loop.
type noteKind uint8

const (
	nSpeechStarted noteKind = iota // a: start ms; flag: interrupt; playout: the one paused
	nSpeechStopped                 // a: end ms
	nCommitted                     // pcm, a, b: start and end ms; eventID
	nCommitEmpty                   // eventID: a commit of an empty buffer
	nCleared                       // eventID
	nTimeout                       // a, b: silent span ms
	nTranscribed                   // itemID, text, err
	nSegment                       // run: its speaker began a sentence (text, flag: hidden)
	nSpeakerDone                   // run: its speaker returned
	nText                          // run: a text delta of a text-only answer
	nToolCall                      // run, call
	nGenDone                       // run, text: finish reason, usage, err
	nToolOutput                    // call, text: output, err
	nPaused                        // playout: paused at the caller's onset; a: played ms
	nResumed                       // playout: resumed, no barge-in; a: played ms
	nDTMF                          // a: the key recognised in-band
	nPartial                       // live: the turn, text: its partial hypothesis; or itemID, text: a provider's delta
)

// note is a message to the loop from the session's other goroutines.
type note struct {
	kind    noteKind
	run     *responseRun
	playout *Playout
	text    string
	itemID  string
	eventID string
	pcm     []int16
	a, b    int64
	flag    bool
	err     error
	call    *llm.ToolCall
	usage   *llm.Usage
	live    uint32 // nCommitted, nSpeechStarted, nPartial: the turn's number in the live feed, 0 if not live
}

// sttJob is one caller turn to transcribe.
type sttJob struct {
	itemID string
	pcm    []int16
	rate   int       // pcm's rate: the input rate
	live   uint32    // the turn's number in the live feed (0: transcribe pcm whole)
	at     time.Time // when the loop committed it
}

// transcriber is the session's STT worker: turns are transcribed one at a
// time, in commit order, so their results arrive in order too.
func (s *Session) transcriber() {
	defer s.wg.Done()
	var w *liveWorker
	var wake chan struct{}
	if s.in.live != nil {
		w = &liveWorker{s: s, st: s.deps.STT.(stt.Streamer), f: s.in.live, rate: s.cfg.InputRate,
			buf: make([]int16, media.SamplesPerFrame(s.cfg.InputRate)*5)}
		wake = s.in.live.wake
		defer w.close()
	}
	for {
		var j sttJob
		// A committed turn goes before more decoding: its transcript is
		// usually ready (the live feed finished it at its end), and
		// the wake comes back every 20 ms while a caller speaks.
		select {
		case j = <-s.sttJobs:
		default:
			select {
			case <-s.ctx.Done():
				return
			case <-wake:
				w.pump()
				continue
			case j = <-s.sttJobs:
			}
		}
		t0 := time.Now()
		var backlog int
		if w != nil {
			backlog = w.f.ring.Len()
		}
		var res stt.Result
		var err error
		done := false
		if j.live != 0 && w != nil {
			res, done, err = w.finish(j.live)
			if err != nil && s.ctx.Err() == nil {
				s.log.Warn("live transcription failed; transcribing the turn whole", "item_id", j.itemID, "err", err)
			}
		}
		if !done {
			var pcm []int16
			pcm, err = to16k(j.pcm, j.rate)
			if err == nil {
				id := j.itemID
				res, err = s.deps.STT.Transcribe(s.ctx, stt.Request{PCM: pcm, Language: s.cfg.Language,
					Partial: func(d string) { s.post(note{kind: nPartial, itemID: id, text: d}) }})
			}
		}
		// Providers keep no PCM after Transcribe (stt.Request), and
		// pcm is j.pcm or a copy of it.
		s.recycleTurn(j.pcm)
		text := res.Text
		s.log.Debug("turn transcribed", "item_id", j.itemID, "live", done,
			"turn_ms", len(j.pcm)*1000/j.rate, "queued_ms", t0.Sub(j.at).Milliseconds(),
			"backlog_ms", backlog*1000/j.rate, "decode_ms", time.Since(t0).Milliseconds(), "words", len(strings.Fields(text)))
		if errors.Is(err, context.Canceled) && s.ctx.Err() != nil {
			return
		}
		s.post(note{kind: nTranscribed, itemID: j.itemID, text: text, err: err})
	}
}

// handle runs a note on the loop.
func (s *Session) handle(n note) {
	switch n.kind {
	case nSpeechStarted:
		if old := s.partial.item; old != "" {
			if _, committed := s.spans[old]; !committed {
				delete(s.sent, old) // a turn dropped before its commit
			}
		}
		s.userItem = s.ids.next("item_")
		s.partial = partialState{turn: n.live, item: s.userItem}
		s.emit(SpeechStarted{ItemID: s.userItem, AudioStartMS: n.a, Interrupt: n.flag})
		if n.playout != nil && s.run != nil && s.run.playout == n.playout {
			s.interrupt = &interruption{run: s.run, itemID: s.userItem}
		}
		s.checkins = 0
	case nSpeechStopped:
		if s.userItem == "" {
			s.userItem = s.ids.next("item_")
		}
		s.emit(SpeechStopped{ItemID: s.userItem, AudioEndMS: n.a})
	case nCommitted:
		s.commit(n)
	case nCommitEmpty:
		s.emit(Error{EventID: n.eventID, Code: "input_audio_buffer_commit_empty",
			Message: "Error committing input audio buffer: the buffer is empty."})
	case nCleared:
		s.emit(InputCleared{EventID: n.eventID})
	case nTimeout:
		s.idle(n)
	case nDTMF:
		s.dtmfSeq++
		s.emit(DTMF{Digit: rune(n.a), Seq: s.dtmfSeq, At: s.now()})
	case nTranscribed:
		s.transcribed(n)
	case nPartial:
		s.partialText(n)
	case nSegment:
		s.segment(n)
	case nSpeakerDone:
		s.speakerDone(n)
	case nText:
		s.textDelta(n)
	case nToolCall:
		s.toolCall(n)
	case nGenDone:
		s.genDone(n)
	case nToolOutput:
		s.toolOutput(n)
	case nPaused, nResumed:
		s.paused(n, n.kind == nResumed)
	}
}

// idle handles the silence timeout: a check-in for agents with check-ins,
// else input_audio_buffer.timeout_triggered and, with create_response, an
// answer.
func (s *Session) idle(n note) {
	if s.run != nil {
		return
	}
	if s.cfg.CheckinInterval > 0 {
		if s.checkins >= s.cfg.MaxCheckins {
			s.end("silence")
			return
		}
		s.checkins++
		s.startRun(responseOpts{audio: true, fixed: s.cfg.CheckinMessage})
		return
	}
	item := s.ids.next("item_")
	s.emit(InputTimeout{ItemID: item, AudioStartMS: n.a, AudioEndMS: n.b})
	if s.autoRespond() {
		s.startRun(responseOpts{audio: true})
	}
}

// to16k brings a turn at rate up to the 16 kHz the STT takes (a copy-free
// no-op at 16 kHz): at 8 kHz with the half-band filter the RTP receive
// path would have used frame by frame (resample.QualityPhone), on the STT
// worker, and only for turns, not for every frame of the call. The
// output is aligned with the input (the filter's delay is taken off the
// front and flushed out at the end) and exactly twice as long.
func to16k(pcm []int16, rate int) ([]int16, error) {
	if rate == media.Rate16k || len(pcm) == 0 {
		return pcm, nil
	}
	q := resample.QualityLow
	if rate == media.Rate8k {
		q = resample.QualityPhone
	}
	r, err := resample.New(rate, media.Rate16k, q)
	if err != nil {
		return nil, fmt.Errorf("agent: turn to 16 kHz: %w", err)
	}
	defer r.Close()
	want := len(pcm) * media.Rate16k / rate
	out := make([]int16, r.OutputLen(len(pcm))+r.Delay())
	n, err := r.ProcessTo(out, pcm)
	if err != nil {
		return nil, fmt.Errorf("agent: turn to 16 kHz: %w", err)
	}
	k, err := r.Flush(out[n:])
	if err != nil {
		return nil, fmt.Errorf("agent: turn to 16 kHz: %w", err)
	}
	d := r.Delay()
	return out[d : d+min(want, n+k-d)], nil
}
