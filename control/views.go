package control

import (
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
)

// ts formats a timestamp as the API does (api.TS).
func ts(t time.Time) string { return api.TS(t) }

func tsPtr(t *time.Time) *string { return api.TSPtr(t) }

// pathID parses a positive integer path parameter (api.PathID).
func pathID(c fiber.Ctx, name string) (int64, error) { return api.PathID(c, name) }

// storeErr maps the store's common errors (api.StoreErr).
func storeErr(err error) error { return api.StoreErr(err) }
