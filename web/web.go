// Package web holds the browser assets the control plane serves: the
// embeddable widget script (widget.js, served at /widget.js) and the
// mic-session test page (mic.html, served at /mic). They are plain files
// with no build step and no dependencies.
package web

import _ "embed"

//go:embed widget.js
var widgetJS []byte

//go:embed mic.html
var micPage []byte

// WidgetJS returns the widget script. The slice is shared: callers must
// not modify it.
func WidgetJS() []byte { return widgetJS }

// MicPage returns the mic-session test page. The slice is shared: callers
// must not modify it.
func MicPage() []byte { return micPage }
