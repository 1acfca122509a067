package digest

import "errors"

var (
	// ErrMalformed means a challenge or credentials header does not parse
	// or lacks a required parameter (realm, nonce; username, response).
	ErrMalformed = errors.New("digest: malformed header")
	// ErrUnsupported means the challenge asks for an algorithm or quality
	// of protection this package does not implement.
	ErrUnsupported = errors.New("digest: unsupported algorithm or qop")
)
