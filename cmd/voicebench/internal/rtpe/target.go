package rtpe

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/voiced/voiced/cmd/voicebench/internal/load"
	"github.com/voiced/voiced/cmd/voicebench/internal/ng"
	"github.com/voiced/voiced/cmd/voicebench/internal/sdp"
)

// Target drives rtpengine through ng as a load.Target (see the package
// documentation for the topology).
type Target struct {
	// Client is the ng connection (Daemon.Client, or a Dial to an
	// rtpengine run elsewhere).
	Client *ng.Client
	// Transcode, when set, is the codec the B leg answers with, so
	// rtpengine transcodes from the offered codec to it.
	Transcode *sdp.Codec
	// RunID keeps call-ids of separate runs apart.
	RunID string
}

// Dial implements load.Target: offer from A, answer from B.
func (t *Target) Dial(ctx context.Context, o load.Offer) (load.Session, load.Answer, error) {
	id := "vb-" + t.RunID + "-" + strconv.Itoa(o.Index)
	offer := map[string]any{
		"command":            "offer",
		"call-id":            id,
		"from-tag":           "a" + strconv.Itoa(o.Index),
		"sdp":                sdp.Write(o.SendFrom, uint64(o.Index), o.Codec),
		"flags":              []string{"trust-address"},
		"replace":            []string{"origin", "session-connection"},
		"ICE":                "remove",
		"transport-protocol": "RTP/AVP",
	}
	want := o.Codec
	if t.Transcode != nil {
		want = *t.Transcode
		offer["codec"] = map[string]any{"transcode": []string{codecSpec(want)}}
	}
	res, err := t.Client.Do(ctx, offer)
	if err != nil {
		return nil, load.Answer{}, err
	}
	toB, err := sdpOf(res)
	if err != nil {
		return nil, load.Answer{}, fmt.Errorf("offer: %w", err)
	}
	bCodec, err := toB.Pick(want)
	if err != nil {
		t.delete(id, o.Index)
		return nil, load.Answer{}, fmt.Errorf("offer: rtpengine did not offer %s to B: %w", want.Name, err)
	}
	res, err = t.Client.Do(ctx, map[string]any{
		"command":  "answer",
		"call-id":  id,
		"from-tag": "a" + strconv.Itoa(o.Index),
		"to-tag":   "b" + strconv.Itoa(o.Index),
		"sdp":      sdp.Write(o.RecvOn, uint64(o.Index), bCodec),
		"flags":    []string{"trust-address"},
		"replace":  []string{"origin", "session-connection"},
	})
	if err != nil {
		t.delete(id, o.Index)
		return nil, load.Answer{}, err
	}
	toA, err := sdpOf(res)
	if err != nil {
		t.delete(id, o.Index)
		return nil, load.Answer{}, fmt.Errorf("answer: %w", err)
	}
	if _, err := toA.Pick(o.Codec); err != nil {
		t.delete(id, o.Index)
		return nil, load.Answer{}, fmt.Errorf("answer: rtpengine answered A without %s: %w", o.Codec.Name, err)
	}
	s := &session{t: t, id: id, index: o.Index}
	return s, load.Answer{SendTo: toA.Addr, ReplyFrom: toB.Addr, Codec: bCodec, OnRecvLane: true}, nil
}

// codecSpec names a codec for ng's codec flags: "opus/48000/2".
func codecSpec(c sdp.Codec) string {
	s := c.Name + "/" + strconv.Itoa(c.Clock)
	if c.Channels > 1 {
		s += "/" + strconv.Itoa(c.Channels)
	}
	return s
}

func sdpOf(res map[string]any) (sdp.Media, error) {
	s, ok := res["sdp"].(string)
	if !ok {
		return sdp.Media{}, fmt.Errorf("reply without sdp: %w", ng.ErrReply)
	}
	return sdp.Parse(s)
}

func (t *Target) delete(id string, idx int) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, _ = t.Client.Do(ctx, map[string]any{"command": "delete", "call-id": id, "from-tag": "a" + strconv.Itoa(idx)})
}

type session struct {
	t     *Target
	id    string
	index int
}

// Hangup implements load.Session with an ng delete.
func (s *session) Hangup(ctx context.Context) error {
	_, err := s.t.Client.Do(ctx, map[string]any{"command": "delete", "call-id": s.id, "from-tag": "a" + strconv.Itoa(s.index)})
	return err
}

// Ended implements load.Session; rtpengine never ends a call by itself
// within voicebench's runs (its media timeout is 60 s).
func (s *session) Ended() <-chan struct{} { return nil }
