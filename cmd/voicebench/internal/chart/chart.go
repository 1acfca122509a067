// Package chart draws the few plots voicebench reports (distributions as
// cumulative curves, CPU against concurrency) as standalone SVG files:
// axes with round tick values, linear or log10 x, a legend, and one
// polyline per series. Output is deterministic (fixed number formatting,
// series in the given order), so charts can be compared as golden files.
package chart

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Kind is how a series is drawn.
type Kind int

const (
	// Line joins the points and marks each one.
	Line Kind = iota
	// Step draws a staircase (y holds until the next x): cumulative
	// distributions.
	Step
	// Scatter marks the points without joining them (samples over time).
	Scatter
)

// Series is one named curve; X and Y have the same length.
type Series struct {
	Name string
	X, Y []float64
}

// Chart is a plot to write. Zero Width and Height mean 720 by 420.
type Chart struct {
	Title, XLabel, YLabel string
	Width, Height         int
	Kind                  Kind
	LogX                  bool
	// YMin and YMax fix the y range when YMax > YMin; otherwise it spans
	// the data (from 0 when all y are positive).
	YMin, YMax float64
	Series     []Series
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"}

const (
	padLeft, padRight, padTop, padBottom = 70, 20, 58, 55
)

// WriteSVG writes c as an SVG document.
func (c *Chart) WriteSVG(w io.Writer) error {
	width, height := c.Width, c.Height
	if width <= 0 {
		width = 720
	}
	if height <= 0 {
		height = 420
	}
	x0, x1, y0, y1, ok := c.bounds()
	if !ok {
		return ErrNoData
	}
	xs := scale{lo: x0, hi: x1, log: c.LogX, from: padLeft, to: float64(width - padRight)}
	ys := scale{lo: y0, hi: y1, from: float64(height - padBottom), to: padTop}

	b := bufio.NewWriter(w)
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	text(b, float64(width)/2, 22, "middle", 15, c.Title)
	// grid, ticks and labels
	for _, t := range xs.ticks() {
		x := xs.at(t)
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#ddd"/>`+"\n", f(x), f(ys.from), f(x), f(ys.to))
		text(b, x, ys.from+16, "middle", 11, label(t))
	}
	for _, t := range ys.ticks() {
		y := ys.at(t)
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#ddd"/>`+"\n", f(xs.from), f(y), f(xs.to), f(y))
		text(b, xs.from-6, y+4, "end", 11, label(t))
	}
	fmt.Fprintf(b, `<rect x="%s" y="%s" width="%s" height="%s" fill="none" stroke="#333"/>`+"\n", f(xs.from), f(ys.to), f(xs.to-xs.from), f(ys.from-ys.to))
	text(b, (xs.from+xs.to)/2, float64(height)-12, "middle", 12, c.XLabel)
	fmt.Fprintf(b, `<text x="16" y="%s" text-anchor="middle" transform="rotate(-90 16 %s)">%s</text>`+"\n", f((ys.from+ys.to)/2), f((ys.from+ys.to)/2), esc(c.YLabel))

	legendX := xs.from
	for i, s := range c.Series {
		color := palette[i%len(palette)]
		var pts []string
		px, py := math.NaN(), math.NaN()
		for j := range min(len(s.X), len(s.Y)) {
			if !xs.valid(s.X[j]) || !finite(s.Y[j]) {
				continue
			}
			x, y := xs.at(s.X[j]), ys.at(clamp(s.Y[j], y0, y1))
			if c.Kind == Step && !math.IsNaN(px) {
				pts = append(pts, f(x)+","+f(py))
			}
			pts = append(pts, f(x)+","+f(y))
			px, py = x, y
		}
		if len(pts) == 0 {
			continue
		}
		if c.Kind != Scatter {
			fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", color, strings.Join(pts, " "))
		}
		if c.Kind != Step {
			for j := range min(len(s.X), len(s.Y)) {
				if xs.valid(s.X[j]) && finite(s.Y[j]) {
					fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`+"\n", f(xs.at(s.X[j])), f(ys.at(clamp(s.Y[j], y0, y1))), color)
				}
			}
		}
		// legend, in a row between the title and the plot
		ly := ys.to - 12
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="3"/>`+"\n", f(legendX), f(ly-4), f(legendX+20), f(ly-4), color)
		text(b, legendX+26, ly, "start", 12, s.Name)
		legendX += 26 + 7*float64(len([]rune(s.Name))) + 18
	}
	b.WriteString("</svg>\n")
	return b.Flush()
}

// bounds spans the data; y starts at 0 when everything is positive.
func (c *Chart) bounds() (x0, x1, y0, y1 float64, ok bool) {
	x0, y0 = math.Inf(1), math.Inf(1)
	x1, y1 = math.Inf(-1), math.Inf(-1)
	for _, s := range c.Series {
		for j := range min(len(s.X), len(s.Y)) {
			x, y := s.X[j], s.Y[j]
			if !finite(x) || !finite(y) || (c.LogX && x <= 0) {
				continue
			}
			x0, x1 = min(x0, x), max(x1, x)
			y0, y1 = min(y0, y), max(y1, y)
			ok = true
		}
	}
	if !ok {
		return 0, 0, 0, 0, false
	}
	if c.YMax > c.YMin {
		y0, y1 = c.YMin, c.YMax
	} else if y0 > 0 {
		y0 = 0
	}
	if x1 == x0 {
		if c.LogX {
			x0, x1 = x0/2, x1*2
		} else {
			x0, x1 = x0-1, x1+1
		}
	}
	if y1 == y0 {
		y1 = y0 + 1
	}
	if !c.LogX {
		x0, x1 = niceFloor(x0, x1), niceCeil(x0, x1)
	}
	y0, y1 = niceFloor(y0, y1), niceCeil(y0, y1)
	return x0, x1, y0, y1, true
}

// scale maps data values to pixels.
type scale struct {
	lo, hi   float64
	log      bool
	from, to float64
}

func (s scale) valid(v float64) bool { return finite(v) && (!s.log || v > 0) }

func (s scale) at(v float64) float64 {
	lo, hi := s.lo, s.hi
	if s.log {
		v, lo, hi = math.Log10(v), math.Log10(lo), math.Log10(hi)
	}
	return s.from + (v-lo)/(hi-lo)*(s.to-s.from)
}

// ticks returns round values inside the range: steps of 1, 2 or 5 times a
// power of ten, about five of them; on a log axis the powers of ten (and
// 2 and 5 times them when fewer than three decades show).
func (s scale) ticks() []float64 {
	var out []float64
	if s.log {
		lo, hi := math.Floor(math.Log10(s.lo)), math.Ceil(math.Log10(s.hi))
		mult := []float64{1}
		if hi-lo < 3 {
			mult = []float64{1, 2, 5}
		}
		for e := lo; e <= hi; e++ {
			for _, m := range mult {
				v := m * math.Pow(10, e)
				if v >= s.lo*(1-1e-9) && v <= s.hi*(1+1e-9) {
					out = append(out, v)
				}
			}
		}
		return out
	}
	step := niceStep(s.hi - s.lo)
	for v := math.Ceil(s.lo/step) * step; v <= s.hi+step*1e-9; v += step {
		out = append(out, math.Round(v/step)*step)
	}
	return out
}

func niceStep(span float64) float64 {
	raw := span / 5
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	switch m := raw / p; {
	case m < 1.5:
		return p
	case m < 3.5:
		return 2 * p
	case m < 7.5:
		return 5 * p
	}
	return 10 * p
}

func niceFloor(lo, hi float64) float64 {
	s := niceStep(hi - lo)
	return math.Floor(lo/s) * s
}

func niceCeil(lo, hi float64) float64 {
	s := niceStep(hi - lo)
	return math.Ceil(hi/s) * s
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func clamp(v, lo, hi float64) float64 { return min(max(v, lo), hi) }

// f formats a pixel coordinate with one decimal.
func f(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// label formats a tick value compactly: 0.05, 2, 1500, 2.5e+06.
func label(v float64) string {
	if v != 0 && (math.Abs(v) >= 1e6 || math.Abs(v) < 1e-3) {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func text(b *bufio.Writer, x, y float64, anchor string, size int, s string) {
	if s == "" {
		return
	}
	fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="%s" font-size="%d">%s</text>`+"\n", f(x), f(y), anchor, size, esc(s))
}

func esc(s string) string {
	var sb strings.Builder
	_ = xml.EscapeText(&sb, []byte(s))
	return sb.String()
}

// cdfPoints bounds the points of a CDF so charts of thousands of calls
// stay small; the steps kept are at most 1/cdfPoints of the samples apart.
const cdfPoints = 400

// CDF turns sorted-or-not samples into the points of a cumulative
// distribution in percent: x the value, y the share of samples <= x.
// Beyond cdfPoints distinct values it keeps one step per 1/cdfPoints of
// the samples, and always the last.
func CDF(values []float64) (x, y []float64) {
	v := append([]float64(nil), values...)
	slices.Sort(v)
	step := max(1, len(v)/cdfPoints)
	next := 0
	for i, s := range v {
		last := i+1 == len(v)
		if !last && (v[i+1] == s || i+1 < next) {
			continue
		}
		x = append(x, s)
		y = append(y, 100*float64(i+1)/float64(len(v)))
		next = i + 1 + step
	}
	return x, y
}
