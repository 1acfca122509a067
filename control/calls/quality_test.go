package calls_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

func ptr[T any](v T) *T { return &v }

// TestCallQuality stores a finished call's media quality and reads it back
// from the call detail, the list, and both exports, on both databases.
func TestCallQuality(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := controltest.NewResources(t, db, controltest.Pool)
		log := a.Srv.CallLog()
		ctx := context.Background()
		o := a.CallOrg("+13105550320")
		admit := func() int64 {
			adm, err := log.Admit(ctx, calllog.AdmitRequest{Direction: "inbound", To: o.Number, From: "+15550004444", At: time.Now().Add(-30 * time.Second)})
			require.NoError(t, err)
			return adm.CallID
		}
		get := func(cid int64) map[string]any {
			r := a.Do("GET", fmt.Sprintf("/v1/calls/%d", cid), o.MembK, nil)
			require.Equal(t, 200, r.Status, string(r.Body))
			return r.Obj(t)
		}

		// A phone call's figures, with unrounded floats as the media side
		// computes them; rtt_ms not measured.
		q := &calllog.CallQuality{Codec: ptr("PCMU"), PacketsSent: ptr(int64(1500)), PacketsReceived: ptr(int64(1490)), PacketsLost: ptr(int64(10)),
			LossPercent: ptr(0.6666666), JitterMS: ptr(1.23456), JitterMaxMS: ptr(7.891), JitterBufferDrops: ptr(int64(3)), ConcealedMS: ptr(int64(260)),
			MOS: ptr(4.31234), DeadAirMS: ptr(int64(0)), TalkOverMS: ptr(int64(420)),
			ResponseLatencyMS: &calllog.ResponseLatency{P50: 640, P95: 910, Max: 1200, Turns: 4}}
		cid := admit()
		require.NoError(t, log.Finish(ctx, cid, calllog.CallEnd{Status: "completed", Reason: "caller_hangup", Quality: q}))
		want := map[string]any{"codec": "PCMU", "packets_sent": float64(1500), "packets_received": float64(1490), "packets_lost": float64(10),
			"loss_percent": 0.667, "jitter_ms": 1.23, "jitter_max_ms": 7.89, "jitter_buffer_drops": float64(3), "concealed_ms": float64(260),
			"rtt_ms": nil, "mos": 4.31, "dead_air_ms": float64(0), "talk_over_ms": float64(420),
			"response_latency_ms": map[string]any{"p50": float64(640), "p95": float64(910), "max": float64(1200), "turns": float64(4)}}
		require.Equal(t, want, get(cid)["quality"])

		// A second finish (redelivery) changes nothing, quality included.
		require.NoError(t, log.Finish(ctx, cid, calllog.CallEnd{Status: "completed", Quality: &calllog.CallQuality{MOS: ptr(1.0)}}))
		require.Equal(t, want, get(cid)["quality"])

		// A call ended without media has a null quality; so has one in progress.
		bare := admit()
		require.NoError(t, log.Finish(ctx, bare, calllog.CallEnd{Status: "failed", Reason: "error"}))
		require.Contains(t, get(bare), "quality")
		require.Nil(t, get(bare)["quality"])
		open := admit()
		require.Nil(t, get(open)["quality"])

		// Impossible figures are refused and the call stays open.
		for _, bad := range []*calllog.CallQuality{{MOS: ptr(5.0)}, {MOS: ptr(0.5)}, {LossPercent: ptr(101.0)}, {PacketsLost: ptr(int64(-1))},
			{JitterMS: ptr(-2.0)}, {ResponseLatencyMS: &calllog.ResponseLatency{P50: 900, P95: 100, Max: 1000, Turns: 2}},
			{ResponseLatencyMS: &calllog.ResponseLatency{}}} {
			require.ErrorIs(t, log.Finish(ctx, open, calllog.CallEnd{Status: "completed", Quality: bad}), calllog.ErrBadEvent, "%+v", bad)
		}
		require.Equal(t, "in_progress", get(open)["status"])

		// A realtime session: the engine's latency only, packets null.
		rt := admit()
		require.NoError(t, log.Finish(ctx, rt, calllog.CallEnd{Status: "completed", Quality: &calllog.CallQuality{
			ResponseLatencyMS: &calllog.ResponseLatency{P50: 300, P95: 300, Max: 300, Turns: 1}}}))
		rq := get(rt)["quality"].(map[string]any)
		require.Nil(t, rq["packets_received"])
		require.Nil(t, rq["mos"])
		require.Equal(t, float64(1), rq["response_latency_ms"].(map[string]any)["turns"])

		// List items carry it too.
		r := a.Do("GET", "/v1/calls?status=completed", o.MembK, nil)
		require.Equal(t, 200, r.Status)
		byID := map[int64]map[string]any{}
		for _, c := range r.Obj(t)["results"].([]any) {
			byID[controltest.ID(c.(map[string]any))] = c.(map[string]any)
		}
		require.Equal(t, want, byID[cid]["quality"])

		// CSV export: flat columns; JSON export: the object.
		r = a.Do("GET", "/v1/calls/export", o.MembK, nil)
		require.Equal(t, 200, r.Status, string(r.Body))
		rows, err := csv.NewReader(strings.NewReader(string(r.Body))).ReadAll()
		require.NoError(t, err)
		hdr := rows[0]
		col := func(name string) int {
			i := slices.Index(hdr, name)
			require.GreaterOrEqual(t, i, 0, name)
			return i
		}
		require.Equal(t, "transcript", hdr[len(hdr)-1])
		row := func(id int64) []string {
			for _, r := range rows[1:] {
				if r[0] == strconv.FormatInt(id, 10) {
					return r
				}
			}
			t.Fatalf("call %d not exported", id)
			return nil
		}
		require.Equal(t, []string{"4.31", "0.667", "1.23", "910"},
			[]string{row(cid)[col("mos")], row(cid)[col("loss_percent")], row(cid)[col("jitter_ms")], row(cid)[col("response_latency_p95_ms")]})
		require.Equal(t, []string{"", "", "", ""},
			[]string{row(bare)[col("mos")], row(bare)[col("loss_percent")], row(bare)[col("jitter_ms")], row(bare)[col("response_latency_p95_ms")]})
		r = a.Do("GET", "/v1/calls/export?format=json", o.MembK, nil)
		require.Equal(t, 200, r.Status)
		found := false
		for _, c := range r.List(t) {
			if controltest.ID(c) == cid {
				found = true
				require.Equal(t, want, c["quality"])
			}
		}
		require.True(t, found)
	})
}
