// Package numbers serves an organization's phone numbers (/v1/phone-numbers),
// the labels of E.164 numbers (/v1/phone-number-labels) and its SIP trunks
// (/v1/voip-connections), and provisions demo numbers.
//
// A number comes from one of two sources. Demo numbers are handed out
// from the operator's pool of DIDs routed to this service (ParseDIDPool);
// a deleted one returns to the pool, and a provisioning one becomes active
// while it is in the pool or failed once the operator removed it
// (Service.Provision, run on every replica). VoIP numbers are imported
// onto the organization's own trunk; they start active and unverified,
// and verify-voip checks the trunk with the telephony side's VoIPVerifier.
// Every change to a number is a version (who changed which fields).
package numbers
