package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/voiced/voiced/media/hugepage"
)

// hugePagePeriod is how often serve looks for heap the runtime mapped
// since the last look, to advise it (--huge-pages).
const hugePagePeriod = 2 * time.Second

// keepHugePages advises the Go heap for transparent huge pages until
// stop is called (--huge-pages). A system without them is logged, not an
// error.
func keepHugePages(ctx context.Context, log *slog.Logger) (stop func(), err error) {
	stop, err = hugepage.Keep(ctx, hugePagePeriod, func(err error) {
		log.Warn("huge pages: could not advise the heap", "err", err)
	})
	if errors.Is(err, hugepage.ErrUnsupported) {
		log.Info("huge pages: the system gives none (transparent_hugepage is never or absent)")
		return func() {}, nil
	}
	return stop, err
}

// diagnostics starts the profiler (--pprof-addr) and huge pages
// (--huge-pages) as configured; stop ends both.
func diagnostics(ctx context.Context, c *config, log *slog.Logger) (stop func(), err error) {
	stopProf, stopHuge := func() {}, func() {}
	if c.PprofAddr != "" {
		if stopProf, err = servePprof(c.PprofAddr, log); err != nil {
			return nil, err
		}
	}
	if c.HugePages {
		if stopHuge, err = keepHugePages(ctx, log); err != nil {
			stopProf()
			return nil, err
		}
	}
	return func() { stopHuge(); stopProf() }, nil
}
