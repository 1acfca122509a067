package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v3"
)

// Decode parses a JSON object body into dst (a struct pointer). Malformed
// JSON, a non-object body and wrong field types are 400s that say what is
// wrong; unknown fields are ignored so clients may send newer fields.
func Decode(c fiber.Ctx, dst any) error {
	b := bytes.TrimSpace(c.Body())
	if len(b) == 0 {
		return Err(http.StatusBadRequest, "Request body must be a JSON object.")
	}
	if b[0] != '{' {
		return Err(http.StatusBadRequest, "Request body must be a JSON object.")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(dst); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te):
			field := te.Field
			if field == "" {
				field = "non_field_errors"
			}
			return FieldErr(field, "Must be "+JSONKind(te.Type.Kind().String())+".")
		case errors.As(err, &se):
			return Err(http.StatusBadRequest, fmt.Sprintf("Malformed JSON at byte %d.", se.Offset))
		default:
			return Err(http.StatusBadRequest, "Malformed JSON: the body ends early or is not valid UTF-8 JSON.")
		}
	}
	if dec.More() {
		return Err(http.StatusBadRequest, "Malformed JSON: unexpected data after the object.")
	}
	return nil
}

// JSONKind names a Go kind the way a validation message does ("a string").
func JSONKind(k string) string {
	switch {
	case k == "string":
		return "a string"
	case k == "bool":
		return "a boolean"
	case strings.HasPrefix(k, "int"), strings.HasPrefix(k, "uint"):
		return "an integer"
	case strings.HasPrefix(k, "float"):
		return "a number"
	case k == "slice":
		return "a list"
	case k == "map", k == "struct":
		return "an object"
	}
	return "of a different type"
}

// Fields accumulates validation messages and reports them as one 400.
type Fields map[string][]string

// Add records msg against field.
func (f Fields) Add(field, msg string) { f[field] = append(f[field], msg) }

// Err is the 400 holding every message, or nil when there are none.
func (f Fields) Err() error {
	if len(f) == 0 {
		return nil
	}
	return &Error{Status: http.StatusBadRequest, Detail: "invalid parameters", Fields: f}
}

// Name checks a display name of 1..max characters and returns it trimmed.
func (f Fields) Name(field string, v *string, required bool, max int) string {
	if v == nil {
		if required {
			f.Add(field, "This field is required.")
		}
		return ""
	}
	s := strings.TrimSpace(*v)
	switch n := len([]rune(s)); {
	case n == 0:
		f.Add(field, "This field may not be blank.")
	case n > max:
		f.Add(field, fmt.Sprintf("Ensure this field has no more than %d characters.", max))
	}
	return s
}

// PathID parses a positive integer path parameter; anything else is a 404
// (no such resource), not a 400, because ids are opaque to clients.
func PathID(c fiber.Ctx, name string) (int64, error) {
	id, err := strconv.ParseInt(c.Params(name), 10, 64)
	if err != nil || id <= 0 {
		return 0, ErrNotFound
	}
	return id, nil
}

// OptID reads an "integer or null" agent id field: absent (set false),
// null (set, nil: clear it) or a positive id.
func OptID(body map[string]json.RawMessage, name string, f Fields) (set bool, id *int64) {
	raw, ok := body[name]
	if !ok {
		return false, nil
	}
	if string(raw) == "null" {
		return true, nil
	}
	var v int64
	if err := json.Unmarshal(raw, &v); err != nil || v <= 0 {
		f.Add(name, "Must be an agent id (a positive integer) or null.")
		return false, nil
	}
	return true, &v
}

// TooLong is the validation message for a string of more than max
// characters, or "" when it fits.
func TooLong(s string, max int) string {
	if utf8.RuneCountInString(s) > max {
		return fmt.Sprintf("Ensure this field has no more than %d characters.", max)
	}
	return ""
}

// OneOf is the validation message for a value outside allowed, or ""
// when v is one of them.
func OneOf(v string, allowed []string) string {
	if slices.Contains(allowed, v) {
		return ""
	}
	return `"` + v + `" is not a valid choice; use one of: ` + strings.Join(allowed, ", ") + "."
}

// IsUUID reports whether s is a UUID in its 36-character text form (hex
// digits of either case, hyphens at 8, 13, 18 and 23).
func IsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, r := range s {
		switch i {
		case 8, 13, 18, 23:
			if r != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
				return false
			}
		}
	}
	return true
}
