package monitoring

import (
	"net/http"

	"github.com/voiced/voiced/control/api"
)

// The receivers' and the acknowledgement link's errors.
var (
	// errBadToken is a missing or wrong shared token.
	errBadToken = api.Err(http.StatusUnauthorized, "A valid monitoring token is required in the token query parameter.")
	// errAckUsed is an acknowledgement link already used, or one whose
	// incident was acknowledged another way.
	errAckUsed = api.Err(http.StatusGone, "This incident was already acknowledged.")
)
