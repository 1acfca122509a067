package api

import (
	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/storage"
)

// Auth says what credential a route needs.
type Auth int

// The credentials a route may need.
const (
	AuthNone Auth = iota // public
	AuthUser             // any credential; an org is optional (personal tokens)
	AuthOrg              // a credential acting in an org
)

// Handler serves an authenticated route; p is nil on AuthNone routes.
type Handler func(c fiber.Ctx, p *storage.Principal) error

// Route is one endpoint. The router and the OpenAPI document are both
// built from the routes, so everything the document says is here.
type Route struct {
	Method, Path string
	Summary, Tag string
	Auth         Auth
	MinRole      storage.Role
	// ReqSchema and ResSchema name components in the OpenAPI document;
	// ResStatus is the success status (0 means 200).
	ReqSchema, ResSchema string
	ResList              bool
	// Query names required string query parameters (a shared token).
	Query     []string
	ResStatus int
	Errors    []int
	// PaymentErrors says 402/422/502/503 may carry a payment error body.
	PaymentErrors bool
	Handler       Handler
	// StreamBody says the handler reads the body as a stream
	// (c.Request().BodyStream()) and enforces its own limits, such as
	// uploads of many megabytes; every other route is refused a body
	// larger than the server's BodyLimit.
	StreamBody bool
	// Raw serves routes that need no principal, such as CORS preflights.
	Raw fiber.Handler
}
