package main

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
)

// event is one server event as the client saw it.
type event struct {
	At         time.Duration // arrival, from the start of the microphone stream
	Type       string
	ResponseID string
	Status     string // response.done's status
	Reason     string // response.done's status_details.reason
	AudioMS    int    // speech_started's audio_start_ms, speech_stopped's audio_end_ms
	Transcript string
	Raw        string // error events only
}

// recvFrame is 20 ms of agent audio as it arrived.
type recvFrame struct {
	At         time.Duration
	Pos        int // where it played, in microphone stream samples
	ResponseID string
	PCM        []int16
}

// session is one realtime WebSocket session driven as a client would: a
// microphone stream sent in real time, one 20 ms append per tick, and the
// agent's audio "played" as it arrives (the server paces it in real time),
// so an echo of it can be fed back.
type session struct {
	nc    net.Conn
	rw    io.ReadWriter
	wmu   sync.Mutex
	start time.Time // tick 0 of the microphone stream

	mu      sync.Mutex
	events  []event
	frames  []recvFrame
	played  []int16 // what the client played, by microphone stream position
	closed  string  // how the server ended the socket ("" while open)
	reason  bool    // ... and whether it gave a reason
	ended   chan struct{}
	clientX bool // the client closed first
	notify  chan struct{}

	// audioOut sends one microphone frame; hangup ends the session from
	// the client's side (nil: the realtime WebSocket's).
	audioOut func([]int16) error
	hangup   func()
}

// dial opens a session and configures it: PCM at 24 kHz both ways, the
// given turn detection, input transcription on.
func dial(ctx context.Context, addr, key string, turn string) (*session, error) {
	d := ws.Dialer{Header: ws.HandshakeHeaderHTTP(http.Header{"Authorization": {"Bearer " + key}}), Timeout: 10 * time.Second}
	// voiced_events=playout: the engine's pause and resume of its audio as
	// events (builds without them ignore the parameter).
	nc, br, _, err := d.Dial(ctx, "ws://"+addr+"/v1/realtime?voiced_events=playout")
	if err != nil {
		return nil, fmt.Errorf("dial realtime: %w", err)
	}
	var r io.Reader = nc
	if br != nil {
		r = io.MultiReader(br, nc)
	}
	s := &session{nc: nc, rw: struct {
		io.Reader
		io.Writer
	}{r, nc}, ended: make(chan struct{}), notify: make(chan struct{}, 1)}
	s.audioOut = s.sendAudio
	if turn == "" {
		turn = `{"type":"server_vad"}`
	}
	if err := s.send(`{"type":"session.update","session":{"type":"realtime","instructions":"Repeat the caller.",` +
		`"audio":{"input":{"format":{"type":"audio/pcm","rate":24000},"turn_detection":` + turn +
		`,"transcription":{"model":"whisper-1"}},"output":{"format":{"type":"audio/pcm","rate":24000}}}}}`); err != nil {
		nc.Close()
		return nil, err
	}
	// Wait for session.updated before the microphone starts.
	_ = nc.SetReadDeadline(time.Now().Add(15 * time.Second))
	for {
		data, err := wsutil.ReadServerText(s.rw)
		if err != nil {
			nc.Close()
			return nil, fmt.Errorf("waiting for session.updated: %w", err)
		}
		var h struct{ Type string }
		_ = json.Unmarshal(data, &h)
		if h.Type == "error" {
			nc.Close()
			return nil, fmt.Errorf("session.update refused: %s", data)
		}
		if h.Type == "session.updated" {
			break
		}
	}
	_ = nc.SetReadDeadline(time.Time{})
	s.start = time.Now()
	go s.read()
	return s, nil
}

func (s *session) send(msg string) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_ = s.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return wsutil.WriteClientText(s.nc, []byte(msg))
}

// sendAudio appends one frame of microphone audio.
func (s *session) sendAudio(pcm []int16) error {
	b := make([]byte, 2*len(pcm))
	for i, v := range pcm {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
	}
	return s.send(`{"type":"input_audio_buffer.append","audio":"` + base64.StdEncoding.EncodeToString(b) + `"}`)
}

func (s *session) now() time.Duration { return time.Since(s.start) }

// read records every server event until the socket ends.
func (s *session) read() {
	defer close(s.ended)
	for {
		msgs, err := wsutil.ReadServerMessage(s.rw, nil)
		if err != nil {
			s.mu.Lock()
			if !s.clientX {
				var ce wsutil.ClosedError
				if errors.As(err, &ce) {
					s.closed = fmt.Sprintf("close %d %q", ce.Code, ce.Reason)
					s.reason = ce.Reason != ""
				} else {
					s.closed = "socket: " + err.Error()
				}
			}
			s.mu.Unlock()
			return
		}
		for _, m := range msgs {
			if m.OpCode != ws.OpText {
				continue
			}
			s.handle(m.Payload)
		}
	}
}

func (s *session) handle(data []byte) {
	at := s.now()
	var e struct {
		Type       string `json:"type"`
		ResponseID string `json:"response_id"`
		Delta      []byte `json:"delta"`
		Transcript string `json:"transcript"`
		AudioStart int    `json:"audio_start_ms"`
		AudioEnd   int    `json:"audio_end_ms"`
		Response   struct {
			ID            string `json:"id"`
			Status        string `json:"status"`
			StatusDetails struct {
				Reason string `json:"reason"`
			} `json:"status_details"`
		} `json:"response"`
	}
	if err := json.Unmarshal(data, &e); err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch e.Type {
	case "response.output_audio.delta", "response.audio.delta":
		pcm := make([]int16, len(e.Delta)/2)
		for i := range pcm {
			pcm[i] = int16(binary.LittleEndian.Uint16(e.Delta[2*i:]))
		}
		// Played from now, or after what is still playing.
		pos := int(at.Seconds() * rate)
		if pos < len(s.played) {
			pos = len(s.played)
		}
		s.frames = append(s.frames, recvFrame{At: at, Pos: pos, ResponseID: e.ResponseID, PCM: pcm})
		for len(s.played) < pos {
			s.played = append(s.played, 0)
		}
		s.played = append(s.played, pcm...)
		return
	}
	ev := event{At: at, Type: e.Type, ResponseID: e.ResponseID, Transcript: e.Transcript}
	switch e.Type {
	case "response.created", "response.done":
		ev.ResponseID, ev.Status, ev.Reason = e.Response.ID, e.Response.Status, e.Response.StatusDetails.Reason
	case "input_audio_buffer.speech_started":
		ev.AudioMS = e.AudioStart
	case "input_audio_buffer.speech_stopped":
		ev.AudioMS = e.AudioEnd
	case "error":
		ev.Raw = string(data)
	}
	s.events = append(s.events, ev)
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// addFrame records agent audio that arrived at at and plays it: from now,
// or after what is still playing. The caller holds s.mu.
func (s *session) addFrame(at time.Duration, id string, pcm []int16) {
	pos := int(at.Seconds() * rate)
	if pos < len(s.played) {
		pos = len(s.played)
	}
	for len(s.played) < pos {
		s.played = append(s.played, 0)
	}
	s.frames = append(s.frames, recvFrame{At: at, Pos: pos, ResponseID: id, PCM: pcm})
	s.played = append(s.played, pcm...)
}

// playedInto copies what the client played from microphone position pos
// into dst (zeros before anything played and after the end).
func (s *session) playedInto(dst []int16, pos int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range dst {
		p := pos + i
		if p >= 0 && p < len(s.played) {
			dst[i] = s.played[p]
		} else {
			dst[i] = 0
		}
	}
}

// snapshot copies the events and frames so far.
func (s *session) snapshot() ([]event, []recvFrame) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]event(nil), s.events...), append([]recvFrame(nil), s.frames...)
}

// close ends the session from the client's side and reports how the server
// had ended it before, if it had.
func (s *session) close() (closedByServer string, withReason bool) {
	s.mu.Lock()
	if s.closed == "" {
		s.clientX = true
	}
	s.mu.Unlock()
	if s.hangup != nil {
		s.hangup()
		<-s.ended
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.closed, s.reason
	}
	s.wmu.Lock()
	_ = s.nc.SetWriteDeadline(time.Now().Add(2 * time.Second))
	_ = ws.WriteFrame(s.nc, ws.MaskFrame(ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusNormalClosure, "done"))))
	s.wmu.Unlock()
	select {
	case <-s.ended:
	case <-time.After(2 * time.Second):
	}
	s.nc.Close()
	<-s.ended
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed, s.reason
}

// stream sends the microphone in real time: mic(k) is the 20 ms captured
// from start + k x 20 ms, sent when its capture ends, as a microphone
// delivers it (so an echo in it is of audio already played), until stop
// returns true or ctx ends.
func (s *session) stream(ctx context.Context, mic func(k int) []int16, stop func(k int) bool) error {
	for k := 0; ; k++ {
		if stop(k) {
			return nil
		}
		if d := time.Until(s.start.Add(time.Duration(k+1) * 20 * time.Millisecond)); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return ctx.Err()
			case <-s.ended:
				return errServerClosed
			}
		}
		select {
		case <-s.ended:
			return errServerClosed
		default:
		}
		if err := s.audioOut(mic(k)); err != nil {
			return fmt.Errorf("append: %w", err)
		}
	}
}

var errServerClosed = errors.New("the server closed the session")
