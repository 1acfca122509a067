package espeak

import "errors"

// ErrUnavailable means libespeak-ng could not be initialized, usually
// because its data files (Debian package espeak-ng-data) are missing.
var ErrUnavailable = errors.New("espeak: library unavailable (is espeak-ng-data installed?)")

// ErrUnknownVoice is returned for a voice (or variant) that the installed
// espeak-ng data does not have, or a language none of its voices speaks.
var ErrUnknownVoice = errors.New("espeak: unknown voice")

// ErrBusy is returned by Synthesize when Config.Queue requests are already
// waiting for the synthesizer.
var ErrBusy = errors.New("espeak: synthesizer queue full")

// ErrClosed is returned by Synthesize after the Synth is closed, and by the
// Read of requests that were still queued when it closed.
var ErrClosed = errors.New("espeak: synthesizer closed")
