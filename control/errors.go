package control

import (
	"errors"
	"net/http"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/control/payment"
)

// APIError is an error with an HTTP status and the body the spec requires
// (api.Error; domain packages return it directly).
type APIError = api.Error

func apiErr(status int, detail string) *APIError { return api.Err(status, detail) }

func fieldErr(field, msg string) *APIError { return api.FieldErr(field, msg) }

var (
	errUnauthenticated = api.ErrUnauthenticated
	errForbidden       = api.ErrForbidden
	errNotFound        = api.ErrNotFound
)

// paymentErrorBody is the body of a payment error (spec section 7).
type paymentErrorBody struct {
	Code       string `json:"code"`
	Message    string `json:"message"`
	Detail     string `json:"detail"`
	Retryable  bool   `json:"retryable"`
	NextAction string `json:"next_action"`
}

// errorHandler is the one place domain and framework errors become HTTP
// responses. Unknown errors are 500 with a generic detail; the real error is
// logged once by the access log.
func (s *Server) errorHandler(c fiber.Ctx, err error) error {
	var ae *APIError
	var fe *fiber.Error
	var pe *payment.Error
	switch {
	case errors.As(err, &pe):
		// Payment errors have their own body (spec section 7); the
		// provider's error, if any, is logged, never shown.
		if pe.Err != nil {
			c.Locals(localErr, err)
		}
		return c.Status(pe.Status).JSON(paymentErrorBody{Code: pe.Code, Message: pe.Message, Detail: pe.Detail, Retryable: pe.Retryable, NextAction: pe.NextAction})
	case errors.As(err, &ae):
	case errors.As(err, &fe):
		switch fe.Code {
		case http.StatusRequestEntityTooLarge:
			ae = apiErr(http.StatusBadRequest, "Request body is too large.")
		case http.StatusNotFound:
			ae = errNotFound
		case http.StatusMethodNotAllowed:
			ae = apiErr(http.StatusMethodNotAllowed, "Method not allowed.")
		default:
			if fe.Code >= 500 {
				ae = apiErr(fe.Code, "Internal server error.")
			} else {
				ae = apiErr(fe.Code, http.StatusText(fe.Code)+".")
			}
		}
	default:
		c.Locals(localErr, err)
		ae = apiErr(http.StatusInternalServerError, "Internal server error.")
	}
	return c.Status(ae.Status).JSON(ae.Body())
}
