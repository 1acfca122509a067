package calllog_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/calllog"
)

func TestBillableMinutes(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want float64
	}{
		{0, 0},
		{time.Second, 0.25}, // minimum a quarter minute
		{7 * time.Second, 0.25},
		{22 * time.Second, 0.25},  // nearest 15 s step: 15 s
		{23 * time.Second, 0.5},   // 22.5 s rounds up to 30 s
		{60 * time.Second, 1},     // exact
		{67 * time.Second, 1},     // 67 s -> 60 s
		{68 * time.Second, 1.25},  // 68 s -> 75 s
		{10 * time.Minute, 10},    // long calls
		{601 * time.Second, 10.0}, // one second over
	} {
		require.Equal(t, tc.want, calllog.BillableMinutes(tc.d), "%v", tc.d)
	}
}

func TestPriceCents(t *testing.T) {
	base := control.Product{Name: "storm-base", CentsPerMinute: 9}
	require.Equal(t, int64(3), base.PriceCents(0.25), "2.25 cents rounds up")
	require.Equal(t, int64(9), base.PriceCents(1), "exact prices are not rounded up")
	require.Equal(t, int64(12), base.PriceCents(1.25), "11.25 -> 12")
	require.Equal(t, int64(0), base.PriceCents(0))
	require.Equal(t, int64(0), control.Product{Name: "free"}.PriceCents(3))
}

func TestParseProducts(t *testing.T) {
	p, err := calllog.ParseProducts(" storm-mini=5, storm-base=9 ,")
	require.NoError(t, err)
	require.Equal(t, []control.Product{{Name: "storm-mini", CentsPerMinute: 5}, {Name: "storm-base", CentsPerMinute: 9}}, p)
	for _, bad := range []string{"", "storm", "storm=x", "storm=-1", "Storm=1", "a=1,a=2", "bad name=1"} {
		_, err := calllog.ParseProducts(bad)
		require.Error(t, err, bad)
	}
}
