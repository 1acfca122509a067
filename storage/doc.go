// Package storage is voiced's SQL persistence: one SQL dialect that runs
// unchanged on SQLite (modernc.org/sqlite, no cgo) and PostgreSQL (pgx v5
// through database/sql), with goose migrations embedded and applied at open.
//
// Conventions, the same on both databases:
//   - placeholders are $1, $2, ...; RETURNING and ON CONFLICT are used freely;
//   - integer ids are 64-bit; UUID ids are TEXT;
//   - timestamps are BIGINT milliseconds since the Unix epoch, UTC, so they
//     round-trip the API's millisecond precision exactly;
//   - row locks are taken with a no-op conditional UPDATE (portable
//     SELECT ... FOR UPDATE), and SQLite write transactions begin IMMEDIATE,
//     so read-check-write sequences cannot interleave;
//   - money is integer USD cents, and every balance change writes a ledger
//     row in the same transaction as the balance update.
//
// Store is built once over a DB and reaches each domain's tables through a
// store of its own (Store.Keys, Store.Orgs, Store.Onboarding,
// Store.PublishableKeys, Store.Webhooks, Store.Billing, Store.Numbers,
// Store.Incidents, Store.Agents, Store.Calls, Store.Outbox), all sharing
// the database, the secret sealer and the clock; control's domain
// packages declare the few methods they use and are handed the field.
// Store itself only holds them and the database (DB).
//
// Store methods translate driver errors where they occur: no rows is
// ErrNotFound, a unique violation is ErrConflict.
package storage
