package webrtc

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/pion/logging"
)

// pionLogs routes pion's logs to slog. pion reports expected events of
// public-facing peers (a browser that vanished, a late STUN packet) as
// warnings and errors, so both go to Debug: a node's log must not grow
// with what remote peers do. Trace and Info are dropped.
type pionLogs struct{ log *slog.Logger }

func (f pionLogs) NewLogger(scope string) logging.LeveledLogger {
	return pionLogger{log: f.log.With("scope", "pion/"+scope)}
}

type pionLogger struct{ log *slog.Logger }

func (l pionLogger) enabled() bool { return l.log.Enabled(context.Background(), slog.LevelDebug) }

func (l pionLogger) Trace(string)          {}
func (l pionLogger) Tracef(string, ...any) {}
func (l pionLogger) Info(string)           {}
func (l pionLogger) Infof(string, ...any)  {}
func (l pionLogger) Debug(string)          {}
func (l pionLogger) Debugf(string, ...any) {}

func (l pionLogger) Warn(msg string) { l.Error(msg) }

func (l pionLogger) Warnf(format string, args ...any) { l.Errorf(format, args...) }

func (l pionLogger) Error(msg string) {
	if l.enabled() {
		l.log.Debug("pion", "msg", msg)
	}
}

func (l pionLogger) Errorf(format string, args ...any) {
	if l.enabled() {
		l.log.Debug("pion", "msg", fmt.Sprintf(format, args...))
	}
}
