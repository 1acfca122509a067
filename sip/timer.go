package sip

import (
	"strconv"
	"strings"
	"time"

	"github.com/emiago/sipgo/sip"
)

// RFC 4028 session timers. In a Session-Expires header "refresher=uac"
// names the client of the transaction that carries it, "uas" its
// server: on a request we receive, uas is us.

// headerer is what requests and responses share for header reads.
type headerer interface {
	GetHeader(name string) sip.Header
	GetHeaders(name string) []sip.Header
}

// header returns the first of the named headers (full or compact form).
func header(m headerer, names ...string) string {
	for _, n := range names {
		if h := m.GetHeader(n); h != nil {
			return h.Value()
		}
	}
	return ""
}

// hasOption reports whether an option tag appears in any of the named
// headers (Supported, Require; compact "k" for Supported).
func hasOption(m headerer, tag string, names ...string) bool {
	for _, n := range names {
		for _, h := range m.GetHeaders(n) {
			for _, t := range strings.Split(h.Value(), ",") {
				if strings.EqualFold(strings.TrimSpace(t), tag) {
					return true
				}
			}
		}
	}
	return false
}

// parseSE reads "1800;refresher=uac" into the interval and refresher.
func parseSE(v string) (time.Duration, string, bool) {
	if v == "" {
		return 0, "", false
	}
	parts := strings.Split(v, ";")
	n, err := strconv.Atoi(strings.TrimSpace(parts[0]))
	if err != nil || n <= 0 {
		return 0, "", false
	}
	ref := ""
	for _, p := range parts[1:] {
		k, val, _ := strings.Cut(strings.TrimSpace(p), "=")
		if strings.EqualFold(k, "refresher") {
			ref = strings.ToLower(strings.TrimSpace(val))
		}
	}
	return time.Duration(n) * time.Second, ref, true
}

// seOffer is our side of the session timer for a request we answer.
type seOffer struct {
	interval  time.Duration
	refresher string // "uac" or "uas"
	require   bool   // the peer supports timer: Require: timer in 2xx
	tooSmall  bool   // answer 422 with our Min-SE
}

// negotiateSE decides the session timer for a request we received
// (RFC 4028 section 9).
func (s *Server) negotiateSE(req *sip.Request, current time.Duration) seOffer {
	peerTimer := hasOption(req, "timer", "Supported", "k", "Require")
	se, ref, ok := parseSE(header(req, "Session-Expires", "x"))
	if ok {
		if se < s.cfg.MinSE {
			return seOffer{tooSmall: true}
		}
		if ref != "uac" && ref != "uas" {
			ref = "uas"
			if peerTimer {
				ref = "uac"
			}
		}
		if !peerTimer {
			ref = "uas" // a proxy asked for timers the peer knows nothing of
		}
		return seOffer{interval: se, refresher: ref, require: peerTimer}
	}
	want := current
	if want == 0 {
		want = s.cfg.SessionExpires
	}
	if want <= 0 {
		return seOffer{}
	}
	if minSE, _, ok := parseSE(header(req, "Min-SE")); ok && minSE > want {
		want = minSE
	}
	ref = "uas"
	if peerTimer {
		ref = "uac"
	}
	return seOffer{interval: want, refresher: ref, require: peerTimer}
}

// headers returns the response headers of o.
func (o seOffer) headers() []sip.Header {
	if o.interval <= 0 {
		return nil
	}
	h := []sip.Header{sip.NewHeader("Session-Expires", strconv.Itoa(int(o.interval.Seconds()))+";refresher="+o.refresher)}
	if o.require {
		h = append(h, sip.NewHeader("Require", "timer"))
	}
	return h
}

// acceptRequestSE records the timer agreed in our answer to a request.
func (c *Call) acceptRequestSE(o seOffer) {
	c.mu.Lock()
	c.se, c.weRefresh = o.interval, o.refresher == "uas"
	c.mu.Unlock()
	c.noteRefresh()
}

// acceptResponseSE records the timer of a 2xx answering our request.
func (c *Call) acceptResponseSE(res *sip.Response) {
	se, ref, ok := parseSE(header(res, "Session-Expires", "x"))
	c.mu.Lock()
	if ok {
		c.se, c.weRefresh = se, ref != "uas"
	} else {
		c.se = 0
	}
	c.mu.Unlock()
	c.noteRefresh()
}
