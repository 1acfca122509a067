// Package billing serves the /v1/billing routes (the account, auto-reload
// settings, top-ups, saved cards, the ledger and the payment provider's
// events) and runs the background side of prepaid billing: the
// auto-reload worker, which drains the reload queue that debits fill in
// storage (at most one reload in flight per org, enforced there), and
// charges each attempt off-session through the payment provider.
//
// Every attempt has its own idempotency key (the reload's id), reused when
// a transient provider error makes the worker try the same attempt again,
// so a reload can never charge twice. A decline or a 3-D Secure demand
// (which an off-session charge cannot satisfy) fails the attempt and turns
// auto-reload off until the user changes the settings or the payment
// method; transient errors retry with backoff, then fail.
package billing
