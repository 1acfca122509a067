package sip

import (
	"fmt"
	"net/netip"
	"time"
)

// Config holds a Server's settings. Zero values mean the defaults noted.
type Config struct {
	// UserAgent names us in User-Agent and Server headers. Default
	// "voiced".
	UserAgent string
	// AdvertiseHost is the host or IP put in Contact and Via headers and
	// in place of an unspecified media address in SDP: the node's public
	// address behind NAT. Default: the listener's IP, or the first
	// non-loopback interface address when it listens on all of them.
	AdvertiseHost string
	// MaxMessageSize bounds one SIP message in bytes; larger datagrams
	// are dropped and a TCP connection carrying one is closed. Default
	// 16384 (RFC 3261 section 18.1.1 keeps UDP requests near 1300 bytes;
	// real INVITEs stay well under 8 KiB).
	MaxMessageSize int
	// RatePerSecond and Burst are the token bucket applied per source IP
	// to every message (and every TCP connection accepted). Over the
	// rate, UDP messages are dropped and TCP connections closed. Defaults
	// 200 messages per second with a burst of 400: a call costs a handful
	// of messages, so one source gets tens of calls per second, while a
	// scanner gets nowhere near flooding the node.
	RatePerSecond float64
	Burst         int
	// Trusted sources skip the rate limit and the connection bound: the
	// carriers' SBCs and, in scale-out, the Kamailio dispatcher that
	// every call comes through.
	Trusted []netip.Prefix
	// MaxConnsPerIP bounds concurrent TCP/TLS connections from one IP.
	// Default 32.
	MaxConnsPerIP int
	// MaxCalls bounds concurrent calls on this node; more are answered
	// 503. Zero means no limit.
	MaxCalls int
	// AdmitTimeout bounds one admission and the media setup of a call.
	// Default 5 s.
	AdmitTimeout time.Duration
	// EarlyMedia answers 183 Session Progress with the SDP answer and
	// starts media before 200 OK, instead of 180 Ringing.
	EarlyMedia bool
	// AnswerDelay is how long an inbound call rings before 200 OK.
	// Default 0: answer as soon as media is ready.
	AnswerDelay time.Duration
	// SessionExpires is the RFC 4028 session interval we ask for, and
	// MinSE the smallest we accept (smaller requests get 422). Defaults
	// 1800 s and 90 s (RFC 4028 sections 4 and 5). A negative
	// SessionExpires turns our own session timers off (we still honour a
	// peer's). RFC 4028 forbids a Min-SE under 90 s; smaller values are
	// accepted (down to 1 s) only so tests can watch timers fire.
	SessionExpires time.Duration
	MinSE          time.Duration
	// RingTimeout bounds how long an outbound call rings before we
	// CANCEL it (end reason no_answer). Default 60 s.
	RingTimeout time.Duration
	// RegisterExpires is the registration lifetime asked for when a trunk
	// needs REGISTER. Default 3600 s; refreshed at half of what the
	// registrar grants.
	RegisterExpires time.Duration
	// ByeTimeout bounds the BYE (or CANCEL) that ends a call. Default 5 s.
	ByeTimeout time.Duration
}

func (c Config) withDefaults() Config {
	if c.UserAgent == "" {
		c.UserAgent = "voiced"
	}
	if c.MaxMessageSize == 0 {
		c.MaxMessageSize = 16384
	}
	if c.RatePerSecond == 0 {
		c.RatePerSecond = 200
	}
	if c.Burst == 0 {
		c.Burst = 400
	}
	if c.MaxConnsPerIP == 0 {
		c.MaxConnsPerIP = 32
	}
	if c.AdmitTimeout == 0 {
		c.AdmitTimeout = 5 * time.Second
	}
	if c.SessionExpires == 0 {
		c.SessionExpires = 1800 * time.Second
	}
	if c.MinSE == 0 {
		c.MinSE = 90 * time.Second
	}
	if c.RingTimeout == 0 {
		c.RingTimeout = 60 * time.Second
	}
	if c.RegisterExpires == 0 {
		c.RegisterExpires = time.Hour
	}
	if c.ByeTimeout == 0 {
		c.ByeTimeout = 5 * time.Second
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.MaxMessageSize < 1024 || c.MaxMessageSize > 65535:
		return fmt.Errorf("sip: MaxMessageSize %d is outside 1024-65535", c.MaxMessageSize)
	case c.RatePerSecond < 0 || c.Burst < 1:
		return fmt.Errorf("sip: rate %v burst %d: need a positive rate and burst", c.RatePerSecond, c.Burst)
	case c.MinSE < time.Second:
		return fmt.Errorf("sip: MinSE %v is below 1 s", c.MinSE)
	case c.SessionExpires > 0 && c.SessionExpires < c.MinSE:
		return fmt.Errorf("sip: SessionExpires %v is below MinSE %v", c.SessionExpires, c.MinSE)
	case c.MaxCalls < 0:
		return fmt.Errorf("sip: MaxCalls %d is negative", c.MaxCalls)
	}
	return nil
}
