package sip

// Answerer is implemented by a Media that wants to know when an outbound
// call is answered: the 2xx is acknowledged and its SDP applied. Early
// media before it (ringback, announcements from a 183) is not the
// callee; answering-machine detection starts here. Answered must not
// block; it is called once, on the call's goroutine.
type Answerer interface {
	Answered()
}
