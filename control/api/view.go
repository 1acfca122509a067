package api

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/voiced/voiced/storage"
)

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

// VersionView is one entry of a versions list (agents and numbers keep
// their deployed versions).
type VersionView struct {
	ID            int64           `json:"id"`
	Revision      int64           `json:"revision"`
	CreatedByID   *int64          `json:"created_by_id"`
	CreatedAt     string          `json:"created_at"`
	Snapshot      json.RawMessage `json:"snapshot"`
	ChangedFields []string        `json:"changed_fields"`
}

// ViewVersions is the body of a versions list: the total count and a page.
func ViewVersions(n int64, vs []storage.Version) map[string]any {
	out := make([]VersionView, len(vs))
	for i, v := range vs {
		out[i] = VersionView{ID: v.ID, Revision: v.Revision, CreatedByID: v.CreatedByID, CreatedAt: TS(v.CreatedAt), Snapshot: v.Snapshot, ChangedFields: NonNil(v.ChangedFields)}
	}
	return map[string]any{"count": n, "results": out}
}

// QueryLimit reads the "limit" query parameter: def when absent, 400 when
// not an integer from 1 to max.
func QueryLimit(c fiber.Ctx, def, max int) (int, error) {
	q := c.Query("limit")
	if q == "" {
		return def, nil
	}
	n, err := strconv.Atoi(q)
	if err != nil || n < 1 || n > max {
		return 0, FieldErr("limit", "Must be an integer from 1 to "+strconv.Itoa(max)+".")
	}
	return n, nil
}

// QueryOffset reads the "offset" query parameter: 0 when absent, 400 when
// not an integer of 0 or more.
func QueryOffset(c fiber.Ctx) (int, error) {
	q := c.Query("offset")
	if q == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(q)
	if err != nil || n < 0 {
		return 0, FieldErr("offset", "Must be an integer of 0 or more.")
	}
	return n, nil
}

// NonNil returns s, or an empty slice for nil, so a list is [] in JSON,
// never null.
func NonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// WebSocketURL is the WebSocket base of an http(s) base URL: wss:// for
// https://, ws:// for http://.
func WebSocketURL(base string) string {
	if rest, ok := strings.CutPrefix(base, "https://"); ok {
		return "wss://" + rest
	}
	return "ws://" + strings.TrimPrefix(base, "http://")
}
