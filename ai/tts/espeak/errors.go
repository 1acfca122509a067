package espeak

import "errors"

// ErrUnavailable means libespeak-ng could not be initialized, usually
// because its data files (Debian package espeak-ng-data) are missing.
var ErrUnavailable = errors.New("espeak: library unavailable (is espeak-ng-data installed?)")
