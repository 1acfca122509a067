package webhook

import "errors"

// ErrBlockedAddress means the guard refused to connect: the destination
// resolved to a private, loopback, link-local or otherwise non-public
// address.
var ErrBlockedAddress = errors.New("webhook: destination address is not public")

// ErrNoLegacyWebhook means the organization has no legacy webhook URL, so
// there is nobody to ask in a blocking exchange.
var ErrNoLegacyWebhook = errors.New("webhook: no legacy webhook configured")

// ErrExchange means a blocking exchange got no usable answer: a transport
// error, a timeout, a non-2xx status or a body that is not the documented
// JSON. Callers proceed without the answer.
var ErrExchange = errors.New("webhook: exchange failed")
