// Package sip is voiced's telephony front door: SIP signalling on
// github.com/emiago/sipgo for inbound and outbound phone calls.
//
// A Server listens on UDP, TCP and TLS. Every message first passes a
// gate (gate.go) that checks it against RFC 3261's grammar before
// sipgo parses it: a malformed request gets 400 (505 for another SIP
// version, 416 for a URI scheme we do not route) from the gate itself,
// a malformed response is dropped and counted (Unparseable); RFC 4475's
// torture messages are its tests. An inbound INVITE then goes through,
// in order: the per-source rate limit and message size limit (dropped
// silently when over), 100 Trying, codec selection (488 when the offer
// has nothing we speak), the trunk source check for numbers on a VoIP
// connection (403), the node's call capacity (503), admission by the
// control plane through Admitter (404, 480 or 503 with a Reason header,
// RFC 3326), a media session from MediaPort, 180 Ringing (or 183 with
// early media) and 200 OK with the SDP answer. In the call it answers
// re-INVITE and UPDATE with the current session (hold and unhold,
// codec change, RFC 4028 session refresh), takes DTMF from SIP INFO,
// ends on BYE either way, on CANCEL before the answer (487), on the
// admission's maximum duration, on session-timer expiry, and on
// Call.Hangup. Call.Transfer sends a REFER (RFC 3515) and follows the
// NOTIFY sipfrag reports.
//
// Outbound calls (Dial) INVITE through a trunk: digest auth on 401/407
// (MD5, SHA-256), optional REGISTER first, early media on 183, a ring
// timeout that CANCELs, and busy, no answer, rejected and failed mapped
// to the call's end. VerifyTrunk checks a trunk with OPTIONS.
//
// The package knows nothing of the control plane or the media engine:
// it declares the small interfaces it needs (Admitter, MediaPort, Media,
// CallLog, TrunkLookup) and cmd/voiced adapts them. Every call ends with
// exactly one CallLog.Finish.
//
// Concurrency: Server and Call are safe for concurrent use. sipgo runs
// each incoming request in its own goroutine; an inbound call lives in
// the goroutine of its INVITE and an outbound one in a goroutine the
// Server starts, both counted by the Server and waited for by Close.
package sip
