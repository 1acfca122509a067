package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v3"
)

// decode parses a JSON object body into dst (a struct pointer). Malformed
// JSON, a non-object body and wrong field types are 400s that say what is
// wrong; unknown fields are ignored so clients may send newer fields.
func decode(c fiber.Ctx, dst any) error {
	b := bytes.TrimSpace(c.Body())
	if len(b) == 0 {
		return apiErr(http.StatusBadRequest, "Request body must be a JSON object.")
	}
	if b[0] != '{' {
		return apiErr(http.StatusBadRequest, "Request body must be a JSON object.")
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
			return fieldErr(field, "Must be "+jsonKind(te.Type.Kind().String())+".")
		case errors.As(err, &se):
			return apiErr(http.StatusBadRequest, fmt.Sprintf("Malformed JSON at byte %d.", se.Offset))
		default:
			return apiErr(http.StatusBadRequest, "Malformed JSON: the body ends early or is not valid UTF-8 JSON.")
		}
	}
	if dec.More() {
		return apiErr(http.StatusBadRequest, "Malformed JSON: unexpected data after the object.")
	}
	return nil
}

func jsonKind(k string) string {
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

// fields accumulates validation messages and reports them as one 400.
type fields map[string][]string

func (f fields) add(field, msg string) { f[field] = append(f[field], msg) }

func (f fields) err() error {
	if len(f) == 0 {
		return nil
	}
	return &APIError{Status: http.StatusBadRequest, Detail: "invalid parameters", Fields: f}
}

// nameField checks a required display name of 1..max characters.
func (f fields) name(field string, v *string, required bool, max int) string {
	if v == nil {
		if required {
			f.add(field, "This field is required.")
		}
		return ""
	}
	s := strings.TrimSpace(*v)
	switch n := len([]rune(s)); {
	case n == 0:
		f.add(field, "This field may not be blank.")
	case n > max:
		f.add(field, fmt.Sprintf("Ensure this field has no more than %d characters.", max))
	}
	return s
}
