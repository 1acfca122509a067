// Package widget serves the embeddable web widget: the publishable keys
// that identify it (/v1/publishable-key, admin+ to change), the public
// signalling a page's widget uses (/v1/widget/calls, /v1/widget/ice-servers),
// the script itself (/widget.js) and the mic test page (/mic).
//
// The public routes carry no credential: a request is gated by its
// publishable key, in order: the key exists and is active (401), the
// page's Origin is one of the key's allowed domains (403), the client
// address is within rate (429) and the widget is enabled (403). The call
// itself (admission, billing, browser media) is the Calls the transport
// hands in.
package widget
