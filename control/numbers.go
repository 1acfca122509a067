package control

import (
	"github.com/voiced/voiced/control/numbers"
	"github.com/voiced/voiced/control/voices"
)

// Numbers returns the numbers domain: cmd/voiced runs its demo-number
// provisioner (numbers.Service.Run).
func (s *Server) Numbers() *numbers.Service { return s.numbers }

// validE164 reports whether s is an E.164 number (numbers.ValidE164).
func validE164(s string) bool { return numbers.ValidE164(s) }

// normalizeLang returns the canonical BCP-47 spelling of tag
// (voices.NormalizeLang).
func normalizeLang(tag string) (string, bool) { return voices.NormalizeLang(tag) }
