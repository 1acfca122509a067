package scenarios

import (
	"errors"
	"net/http"

	"github.com/voiced/voiced/control/api"
)

// errNoModel answers the model routes when no model is configured.
var errNoModel = api.Err(http.StatusServiceUnavailable, "No model is configured on this server (VOICED_LLM_BASE_URL), so scenarios cannot be written by the model.")

// errModel answers a model failure or an unusable reply; nothing was saved.
var errModel = api.Err(http.StatusBadGateway, "The model did not return usable scenarios; nothing was saved. Try again.")

// errReply is an unusable model reply.
var errReply = errors.New("scenarios: unusable model reply")
