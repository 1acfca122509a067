// Package realtime issues and redeems the session tokens of POST
// /v1/realtime/sessions: rt_<call id>.<expiry>.<nonce>.<HMAC-SHA256 of
// those>, signed with the URL-signing key. What a token grants is opaque
// here (control encodes its admission); it is stored with the nonce's
// hash, so the socket may reach any control replica sharing the database,
// and each token is redeemed once. A sweep after the expiry hands the
// calls whose tokens were never used to the owner's OnExpire.
package realtime
