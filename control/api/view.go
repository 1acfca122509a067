package api

import "time"

// TS formats a timestamp as the API does: ISO 8601, UTC, milliseconds.
func TS(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// TSPtr is TS for an optional timestamp.
func TSPtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := TS(*t)
	return &s
}
