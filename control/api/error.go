package api

import (
	"errors"
	"net/http"

	"github.com/voiced/voiced/storage"
)

// Error is an error with an HTTP status and the body the spec requires.
// Detail is written for users and never echoes an internal error string.
type Error struct {
	Status int
	// Detail is the generic body {"detail": Detail}.
	Detail string
	// Fields, when set, is a validation body {"field": ["message"]}.
	Fields map[string][]string
	// Extra fields merged into a detail body (e.g. legacy_path).
	Extra map[string]any
}

func (e *Error) Error() string { return e.Detail }

// Body is the error's JSON body.
func (e *Error) Body() any {
	if e.Fields != nil {
		return e.Fields
	}
	m := map[string]any{"detail": e.Detail}
	for k, v := range e.Extra {
		m[k] = v
	}
	return m
}

// Err returns a generic error {"detail": detail} with status.
func Err(status int, detail string) *Error { return &Error{Status: status, Detail: detail} }

// FieldErr returns a 400 validation error with one message for field.
func FieldErr(field, msg string) *Error {
	return &Error{Status: http.StatusBadRequest, Detail: "invalid parameters", Fields: map[string][]string{field: {msg}}}
}

// The errors every domain answers with.
var (
	ErrUnauthenticated = Err(http.StatusUnauthorized, "Authentication credentials were not provided or are invalid.")
	ErrForbidden       = Err(http.StatusForbidden, "You do not have permission to perform this action.")
	ErrNotFound        = Err(http.StatusNotFound, "Not found.")
)

// StoreErr maps the store's common errors; handlers map rule errors whose
// status depends on the endpoint before calling it.
func StoreErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, storage.ErrNotFound), errors.Is(err, storage.ErrNotMember):
		return ErrNotFound
	case errors.Is(err, storage.ErrRole):
		return ErrForbidden
	case errors.Is(err, storage.ErrConflict):
		return Err(http.StatusConflict, "The request conflicts with the current state; retry.")
	}
	return err
}
