package control

import (
	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
)

// decode parses a JSON object body into dst (api.Decode).
func decode(c fiber.Ctx, dst any) error { return api.Decode(c, dst) }

// fields accumulates validation messages and reports them as one 400
// (api.Fields, kept with lowercase methods for the handlers still here).
type fields map[string][]string

func (f fields) add(field, msg string) { api.Fields(f).Add(field, msg) }

func (f fields) err() error { return api.Fields(f).Err() }

// name checks a display name of 1..max characters (api.Fields.Name).
func (f fields) name(field string, v *string, required bool, max int) string {
	return api.Fields(f).Name(field, v, required, max)
}

func jsonKind(k string) string { return api.JSONKind(k) }
