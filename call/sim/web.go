package sim

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
)

// WebTarget is a saved agent reached through the node's realtime
// WebSocket, as a browser or SDK reaches it.
type WebTarget struct {
	// URL is the realtime endpoint (ws://host:port/v1/realtime).
	URL string
	// Key is an API key of the agent's organization, or a realtime
	// session token (the call admitted already; AgentID 0).
	Key     string
	AgentID int64
}

// CallWeb connects to the agent over the realtime WebSocket (a real
// client on a real socket, in this process) and plays cfg's caller: its
// audio goes up as input_audio_buffer.append events of 20 ms of 16 kHz
// PCM, in real time, and the agent's audio and transcript come back as
// the protocol's response events. The realtime protocol has no DTMF
// event, so digits go in-band: the tones are in the caller's audio, as a
// browser microphone would carry them (Result.DTMFVia "inband").
func CallWeb(ctx context.Context, t WebTarget, cfg Config) (*Result, error) {
	ctx, cancel, err := cfg.bound(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	const rate = 16000
	b, err := newBot(cfg, rate)
	if err != nil {
		return nil, err
	}
	u := t.URL
	if t.AgentID != 0 { // else Key is a session token naming the agent's call
		if strings.Contains(u, "?") {
			u += "&"
		} else {
			u += "?"
		}
		u += "agent_id=" + strconv.FormatInt(t.AgentID, 10)
	}
	d := ws.Dialer{Header: ws.HandshakeHeaderHTTP(http.Header{"Authorization": {"Bearer " + t.Key}}), Timeout: 10 * time.Second}
	conn, br, _, err := d.Dial(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("sim: realtime connect: %w", err)
	}
	// Events the server sent right after the handshake may already be in
	// the handshake's buffer.
	var rd io.Reader = conn
	if br != nil {
		rd = io.MultiReader(br, conn)
	}
	wc := &webCall{conn: conn, rw: rwPair{rd, conn}, bot: b, answered: make(chan struct{}), ended: make(chan struct{})}
	res := &Result{Voice: VoiceFor(cfg.Scenario.Accent), Start: time.Now(), Rate: rate}
	go wc.read()
	select {
	case <-wc.answered:
	case <-wc.ended:
		return nil, fmt.Errorf("sim: the session ended before it was live: %s", wc.why())
	case <-ctx.Done():
		conn.Close()
		return nil, fmt.Errorf("sim: no session.updated: %w", ctx.Err())
	}
	res.CallID = wc.callID
	sending := make(chan struct{})
	go func() { defer close(sending); wc.send(rate) }()
	converse(ctx, cfg, b, wc, res)
	wc.Hangup()
	<-sending
	select {
	case <-wc.ended:
	case <-time.After(10 * time.Second):
	}
	if res.End == "caller_hangup" && wc.serverClosed {
		res.End = "agent_hangup"
	}
	if cfg.Scenario.DTMF != "" && res.DTMF != "" {
		res.DTMFVia = "inband"
	}
	res.Duration = time.Since(res.Start)
	if cfg.KeepAudio {
		b.mu.Lock()
		res.Sent, res.Speech, res.Tone = b.sent, b.speech, b.tone
		b.mu.Unlock()
	}
	return res, nil
}

// webCall is one realtime session: the bot's channel.
type webCall struct {
	conn     net.Conn
	rw       io.ReadWriter
	bot      *bot
	callID   int64
	answered chan struct{}
	ended    chan struct{}
	wmu      sync.Mutex

	mu           sync.Mutex
	transcript   []string
	lastErr      string
	serverClosed bool
	hung         bool
}

// rwPair reads from one side and writes to the other.
type rwPair struct {
	io.Reader
	io.Writer
}

func (w *webCall) why() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastErr
}

// read takes the server's events until the socket closes.
func (w *webCall) read() {
	defer close(w.ended)
	once := sync.Once{}
	for {
		data, op, err := wsutil.ReadServerData(w.rw)
		if err != nil {
			w.mu.Lock()
			if !w.hung {
				w.serverClosed = true
				if w.lastErr == "" {
					w.lastErr = err.Error()
				}
			}
			w.mu.Unlock()
			return
		}
		if op != ws.OpText {
			continue
		}
		var ev struct {
			Type       string          `json:"type"`
			Delta      string          `json:"delta"`
			Transcript string          `json:"transcript"`
			Session    json.RawMessage `json:"session"`
			Error      json.RawMessage `json:"error"`
		}
		if json.Unmarshal(data, &ev) != nil {
			continue
		}
		switch ev.Type {
		case "session.updated":
			var s struct {
				CallID string `json:"call_id"`
			}
			_ = json.Unmarshal(ev.Session, &s)
			if id, err := strconv.ParseInt(s.CallID, 10, 64); err == nil && id > 0 {
				once.Do(func() { w.callID = id; close(w.answered) })
			}
		case "response.output_audio.delta", "response.audio.delta":
			raw, err := base64.StdEncoding.DecodeString(ev.Delta)
			if err != nil {
				continue
			}
			pcm := make([]int16, len(raw)/2)
			for i := range pcm {
				pcm[i] = int16(binary.LittleEndian.Uint16(raw[2*i:]))
			}
			w.bot.hear(pcm, w.bot.rate, time.Now())
		case "response.output_audio_transcript.done", "response.audio_transcript.done":
			w.mu.Lock()
			w.transcript = append(w.transcript, ev.Transcript)
			w.mu.Unlock()
		case "error":
			w.mu.Lock()
			w.lastErr = string(ev.Error)
			w.mu.Unlock()
		}
	}
}

// send streams the bot's audio in real time, 20 ms per event, until the
// call ends or the caller hangs up.
func (w *webCall) send(rate int) {
	frame := make([]int16, rate/50)
	raw := make([]byte, 2*len(frame))
	next := time.Now()
	for {
		select {
		case <-w.ended:
			return
		default:
		}
		w.mu.Lock()
		hung := w.hung
		w.mu.Unlock()
		if hung {
			return
		}
		w.bot.ReadFrame(frame) // silence too: a microphone never stops
		for i, v := range frame {
			binary.LittleEndian.PutUint16(raw[2*i:], uint16(v))
		}
		msg, _ := json.Marshal(map[string]string{"type": "input_audio_buffer.append", "audio": base64.StdEncoding.EncodeToString(raw)})
		w.wmu.Lock()
		err := wsutil.WriteClientText(w.conn, msg)
		w.wmu.Unlock()
		if err != nil {
			return
		}
		next = next.Add(20 * time.Millisecond)
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		} else if d < -200*time.Millisecond {
			next = time.Now() // too far behind: do not burst
		}
	}
}

func (w *webCall) DTMF(digits string) (string, error) {
	<-w.bot.sayTones(inband(digits, w.bot.rate))
	return "inband", nil
}

func (w *webCall) Hangup() {
	w.mu.Lock()
	if w.hung {
		w.mu.Unlock()
		return
	}
	w.hung = true
	w.mu.Unlock()
	w.wmu.Lock()
	_ = wsutil.WriteClientMessage(w.conn, ws.OpClose, ws.NewCloseFrameBody(ws.StatusNormalClosure, "caller hung up"))
	w.wmu.Unlock()
	go func() {
		select {
		case <-w.ended:
		case <-time.After(5 * time.Second):
		}
		w.conn.Close()
	}()
}

func (w *webCall) Done() <-chan struct{} { return w.ended }

func (w *webCall) Transcript() (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := strings.Join(w.transcript, " ")
	w.transcript = nil
	return t, true
}
