package chart

import (
	"bytes"
	"encoding/xml"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
}

// wellFormed parses the whole document as XML.
func wellFormed(t *testing.T, b []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		require.NoError(t, err)
	}
}

func TestLineChartGolden(t *testing.T) {
	c := Chart{
		Title: "CPU against concurrency <S1 & S2>", XLabel: "concurrent calls", YLabel: "CPU %",
		Series: []Series{
			{Name: "ours", X: []float64{100, 200, 400, 800}, Y: []float64{5, 10, 21, 43}},
			{Name: "rtpengine", X: []float64{100, 200, 400, 800}, Y: []float64{7, 13, 27, 55}},
		},
	}
	var buf bytes.Buffer
	require.NoError(t, c.WriteSVG(&buf))
	wellFormed(t, buf.Bytes())
	require.Contains(t, buf.String(), "&lt;S1 &amp; S2&gt;")
	golden(t, "line.svg", buf.Bytes())
}

func TestStepCDFGolden(t *testing.T) {
	x, y := CDF([]float64{0.4, 0.2, 0.2, 3, 12, 0.9})
	require.Equal(t, []float64{0.2, 0.4, 0.9, 3, 12}, x)
	require.InDeltaSlice(t, []float64{100.0 / 3, 50, 200.0 / 3, 250.0 / 3, 100}, y, 1e-9)
	c := Chart{Title: "jitter", XLabel: "ms", YLabel: "% of packets", Kind: Step, LogX: true, YMin: 0, YMax: 100,
		Series: []Series{{Name: "|D|", X: x, Y: y}}}
	var buf bytes.Buffer
	require.NoError(t, c.WriteSVG(&buf))
	wellFormed(t, buf.Bytes())
	golden(t, "cdf.svg", buf.Bytes())
}

var pointsRE = regexp.MustCompile(`points="([^"]*)"`)

func TestCDFThinsLargeSamples(t *testing.T) {
	v := make([]float64, 10000)
	for i := range v {
		v[i] = float64(i)
	}
	x, y := CDF(v)
	require.LessOrEqual(t, len(x), cdfPoints+1)
	require.Greater(t, len(x), cdfPoints/2)
	require.Equal(t, 9999.0, x[len(x)-1])
	require.Equal(t, 100.0, y[len(y)-1])
	for i := 1; i < len(x); i++ {
		require.Less(t, x[i-1], x[i])
		require.LessOrEqual(t, y[i]-y[i-1], 100.0/cdfPoints+1e-9, "no step hides more than 1/cdfPoints of the samples")
	}
}

func TestPointsLandInThePlot(t *testing.T) {
	c := Chart{Width: 500, Height: 300, Series: []Series{{Name: "a", X: []float64{0, 10}, Y: []float64{0, 100}}}}
	var buf bytes.Buffer
	require.NoError(t, c.WriteSVG(&buf))
	m := pointsRE.FindStringSubmatch(buf.String())
	require.NotNil(t, m)
	pts := strings.Fields(m[1])
	require.Len(t, pts, 2)
	xy := func(p string) (float64, float64) {
		a, b, _ := strings.Cut(p, ",")
		x, err := strconv.ParseFloat(a, 64)
		require.NoError(t, err)
		y, err := strconv.ParseFloat(b, 64)
		require.NoError(t, err)
		return x, y
	}
	// (0,0) is the bottom-left corner of the plot, (10,100) the top right.
	x, y := xy(pts[0])
	require.Equal(t, float64(padLeft), x)
	require.Equal(t, float64(300-padBottom), y)
	x, y = xy(pts[1])
	require.Equal(t, float64(500-padRight), x)
	require.Equal(t, float64(padTop), y)
}

func TestTicks(t *testing.T) {
	require.Equal(t, []float64{0, 20, 40, 60, 80, 100}, scale{lo: 0, hi: 100}.ticks())
	require.Equal(t, []float64{0, 0.5, 1, 1.5, 2, 2.5}, scale{lo: 0, hi: 2.5}.ticks())
	require.Equal(t, []float64{0.1, 1, 10, 100, 1000}, scale{lo: 0.1, hi: 1000, log: true}.ticks())
	require.Equal(t, []float64{1, 2, 5, 10, 20}, scale{lo: 1, hi: 20, log: true}.ticks())
}

func TestNoData(t *testing.T) {
	var buf bytes.Buffer
	require.ErrorIs(t, (&Chart{}).WriteSVG(&buf), ErrNoData)
	c := Chart{LogX: true, Series: []Series{{X: []float64{0, -1}, Y: []float64{1, 2}}}}
	require.ErrorIs(t, c.WriteSVG(&buf), ErrNoData)
	// One point still draws.
	c = Chart{Series: []Series{{Name: "one", X: []float64{3}, Y: []float64{3}}}}
	require.NoError(t, c.WriteSVG(&buf))
}
