package sip

import "time"

// Answerer is implemented by a Media that wants to know when an outbound
// call is answered: the 2xx is acknowledged and its SDP applied. Early
// media before it (ringback, announcements from a 183) is not the
// callee; answering-machine detection starts here, and billing. at is
// when the 2xx came (End.Answered). Answered must not block; it is called
// once, on the call's goroutine.
type Answerer interface {
	Answered(at time.Time)
}
