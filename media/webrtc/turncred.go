package webrtc

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// TURNCredentials returns time-limited TURN credentials in the form of
// the TURN REST API (draft-uberti-behave-turn-rest), which coturn checks
// with use-auth-secret and static-auth-secret: the username is
// "<expiry unix seconds>:<id>" and the password the base64 of
// HMAC-SHA1(secret, username). The TURN server accepts them until expiry
// without knowing id, so no per-call state is shared with it.
func TURNCredentials(secret, id string, expiry time.Time) (username, password string) {
	username = strconv.FormatInt(expiry.Unix(), 10)
	if id != "" {
		username += ":" + id
	}
	mac := hmac.New(sha1.New, []byte(secret))
	mac.Write([]byte(username))
	return username, base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// iceServers returns the configured STUN and TURN servers with
// credentials for id: TURN REST credentials valid for TURNCredentialTTL
// when TURNSecret is set, else the configured static ones. STUN servers
// carry no credentials.
func (c Config) iceServers(id string, now time.Time) []ICEServer {
	out := make([]ICEServer, 0, len(c.ICEServers))
	for _, s := range c.ICEServers {
		s.URLs = append([]string(nil), s.URLs...)
		if !hasTURN(s.URLs) {
			s.Username, s.Credential = "", ""
		} else if c.TURNSecret != "" {
			s.Username, s.Credential = TURNCredentials(c.TURNSecret, id, now.Add(c.TURNCredentialTTL))
		}
		out = append(out, s)
	}
	return out
}

func hasTURN(urls []string) bool {
	for _, u := range urls {
		if strings.HasPrefix(u, "turn:") || strings.HasPrefix(u, "turns:") {
			return true
		}
	}
	return false
}

// BrowserICEServers returns the ICE servers a browser should use for a
// call (RTCPeerConnection's iceServers), with credentials tied to id (a
// call or publishable key id; it appears in the TURN server's logs), and
// when those credentials expire (zero for static or no credentials). It
// is empty when the node has no STUN or TURN servers: the browser reaches
// the node's host candidates directly.
func (s *Server) BrowserICEServers(id string) ([]ICEServer, time.Time) {
	now := time.Now()
	servers := s.cfg.iceServers(id, now)
	var exp time.Time
	if s.cfg.TURNSecret != "" {
		for _, is := range servers {
			if hasTURN(is.URLs) {
				exp = now.Add(s.cfg.TURNCredentialTTL).Truncate(time.Second)
				break
			}
		}
	}
	return servers, exp
}
