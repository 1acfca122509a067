package realtime

import (
	"errors"
	"sort"
	"strings"
)

var (
	// ErrUnauthorized means the credential is missing, unknown or expired.
	ErrUnauthorized = errors.New("realtime: unauthorized")
	// ErrUnknownAgent means agent_id names no agent of the organization.
	ErrUnknownAgent = errors.New("realtime: agent not found")
	// ErrInsufficientBalance means the organization cannot pay for a call.
	ErrInsufficientBalance = errors.New("realtime: insufficient balance")
	// ErrSessionLimit means the organization has its maximum of sessions.
	ErrSessionLimit = errors.New("realtime: too many concurrent sessions")
	// ErrConfig reports an invalid Config or Deps.
	ErrConfig = errors.New("realtime: invalid config")
)

// ConfigError is an inline configuration control refused: field names
// (as in the API: "voice", "telephony") to messages.
type ConfigError struct {
	Fields map[string][]string
}

// Error lists the fields and their messages.
func (e *ConfigError) Error() string {
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("invalid config:")
	for _, k := range keys {
		b.WriteString(" " + k + ": " + strings.Join(e.Fields[k], " "))
	}
	return b.String()
}
