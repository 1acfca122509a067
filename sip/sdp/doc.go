// Package sdp parses and builds SDP session descriptions (RFC 4566) and
// runs the offer/answer model (RFC 3264) for the audio streams voiced
// speaks: PCMU and PCMA at 8 kHz, Opus at 48 kHz (opus/48000/2) and
// RFC 4733 telephone-event at 8 and 48 kHz.
//
// Parse accepts CRLF and bare LF line ends, keeps every attribute in
// order (so unknown ones survive a round trip) and refuses input that is
// not SDP: a missing v=0, o=, s= or t= line, a line without "x=", a port
// or payload type out of range. Session.AppendTo writes CRLF lines in the
// RFC 4566 section 5 order.
//
// Negotiation: Select reads an offer (or an answer to our offer) and
// picks, for the first usable audio m= line, the first codec of the
// remote list that the local list has (the offerer's preference wins, as
// RFC 3264 section 6.1 suggests), plus the telephone-event format whose
// clock rate matches it. Answer builds the RFC 3264 answer: one m= line
// per offered line, unused ones rejected with port 0, the chosen codec
// under the offerer's payload type, and the direction mirrored (an offer
// that puts us on hold with a=sendonly is answered a=recvonly). Offer
// builds our own offers (outbound calls, re-INVITEs without SDP).
package sdp
