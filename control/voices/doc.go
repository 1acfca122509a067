// Package voices is the voice catalog: the voices the configured TTS
// providers really have (Espeak offline by default), merged once at
// start-up into an immutable Catalog, and GET /v1/voices, which filters it
// by language (BCP-47; a bare language matches its regional forms),
// category and gender. A provider that fails to list its voices is left
// out and logged, so the others stay usable.
package voices
