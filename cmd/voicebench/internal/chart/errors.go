package chart

import "errors"

// ErrNoData is returned for a chart with no finite point to draw (or no
// positive x on a log axis).
var ErrNoData = errors.New("chart: no data")
