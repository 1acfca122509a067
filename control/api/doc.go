// Package api is the vocabulary the control plane's domain packages share
// with the transport (package control): a Route describes one endpoint,
// Error is an HTTP error with the body spec/api.md section 7 requires, and
// Decode, Fields, PathID, StoreErr and TS are the request and response
// helpers every handler uses.
//
// A domain package (orgs, keys, webhook, ...) declares the store interface
// it consumes and returns its routes; package control mounts them behind
// authentication and role checks, lists them in the OpenAPI document and
// turns every error they return into a response in its one error handler.
// Package api imports nothing of the control plane but storage's types, so
// both sides can import it.
package api
