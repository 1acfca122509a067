package coordtest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/storage/coord"
)

var eventTests = []test{
	{"publish_read_ack", testEventsPublishReadAck},
	{"unacked_redelivered_to_another_consumer", testEventsRedelivered},
	{"group_consumers_share_and_groups_each_see_all", testEventsGroups},
	{"new_group_sees_earlier_events", testEventsEarlier},
	{"read_waits_for_publish", testEventsWait},
	{"read_wait_times_out_empty", testEventsWaitTimeout},
	{"batches_respect_max", testEventsMax},
	{"rejects_invalid_args", testEventsInvalid},
}

func read(t *testing.T, c coord.Coordinator, stream, group, consumer string, max int) []coord.Delivery {
	t.Helper()
	ds, err := c.Read(t.Context(), coord.ReadArgs{Stream: stream, Group: group, Consumer: consumer, Max: max})
	require.NoError(t, err)
	return ds
}

func publish(t *testing.T, c coord.Coordinator, stream string, ev coord.Event) string {
	t.Helper()
	id, err := c.Publish(t.Context(), stream, ev)
	require.NoError(t, err)
	require.NotEmpty(t, id)
	if ev.ID != "" {
		require.Equal(t, ev.ID, id)
	}
	return id
}

func receipts(ds []coord.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Receipt
	}
	return out
}

func testEventsPublishReadAck(t *testing.T, newCoord NewFunc) {
	c := newCoord(t, Config())
	evs := []coord.Event{
		{ID: "call.started:1", Type: "call.started", Data: []byte(`{"call":1}`)},
		{Type: "call.ended", Data: []byte{0, 1, 2, 255}},
		{Type: "call.empty"},
	}
	for i := range evs {
		evs[i].ID = publish(t, c, "calls", evs[i])
	}
	require.NotEqual(t, evs[1].ID, evs[2].ID, "generated ids are unique")

	ds := read(t, c, "calls", "billing", "r1", 10)
	require.Len(t, ds, 3)
	for i, d := range ds {
		require.Equal(t, evs[i], d.Event)
		require.Equal(t, 1, d.Deliveries)
		require.NotEmpty(t, d.Receipt)
	}
	// Deliveries carry copies: scribbling on one changes nothing stored.
	ds[0].Data[0] = 'X'

	require.NoError(t, c.Ack(t.Context(), "calls", "billing", receipts(ds)...))
	require.NoError(t, c.Ack(t.Context(), "calls", "billing", receipts(ds)...), "ack is idempotent")
	time.Sleep(Visibility + Visibility/2)
	require.Empty(t, read(t, c, "calls", "billing", "r2", 10), "acknowledged events came back")

	// Another group reads the untouched originals.
	ds = read(t, c, "calls", "audit", "r1", 1)
	require.Len(t, ds, 1)
	require.Equal(t, evs[0], ds[0].Event)
}

// testEventsRedelivered is the crash case: consumer "dead" reads and never acknowledges.
// The event stays invisible to the group until the visibility timeout, then goes to the
// next reader with the same id and a higher delivery count.
func testEventsRedelivered(t *testing.T, newCoord NewFunc) {
	retryTiming(t, func() bool {
		c := newCoord(t, Config())
		ev := coord.Event{ID: "call.ended:42", Type: "call.ended", Data: []byte("42")}
		publish(t, c, "calls", ev)
		publish(t, c, "calls", coord.Event{ID: "call.ended:43", Type: "call.ended"})

		start := time.Now()
		first := read(t, c, "calls", "billing", "dead", 1)
		require.Len(t, first, 1)
		require.Equal(t, ev, first[0].Event)

		// Before the timeout the survivor gets only the event nobody holds.
		ds := read(t, c, "calls", "billing", "survivor", 10)
		require.NoError(t, c.Ack(t.Context(), "calls", "billing", receipts(ds)...))
		empty := read(t, c, "calls", "billing", "survivor", 10)
		if time.Since(start) >= Visibility {
			return false
		}
		require.Len(t, ds, 1)
		require.Equal(t, "call.ended:43", ds[0].ID)
		require.Empty(t, empty)

		time.Sleep(Visibility + Visibility/2)
		again := read(t, c, "calls", "billing", "survivor", 10)
		require.Len(t, again, 1)
		require.Equal(t, ev, again[0].Event, "same event, same id")
		require.Equal(t, 2, again[0].Deliveries)
		require.NoError(t, c.Ack(t.Context(), "calls", "billing", again[0].Receipt))

		time.Sleep(Visibility + Visibility/2)
		require.Empty(t, read(t, c, "calls", "billing", "dead", 10), "acknowledged after redelivery")
		return true
	})
}

// testEventsGroups publishes n events and drains them with three concurrent consumers
// of one group, acknowledging each: every event is processed exactly once in the
// group, and a second group independently sees all of them.
func testEventsGroups(t *testing.T, newCoord NewFunc) {
	c := newCoord(t, stable())
	const n = 60
	for i := range n {
		publish(t, c, "ev", coord.Event{ID: fmt.Sprintf("e%02d", i), Type: "t"})
	}
	var (
		mu   sync.Mutex
		seen = map[string]string{} // event id → consumer
		wg   sync.WaitGroup
	)
	for w := range 3 {
		wg.Go(func() {
			consumer := fmt.Sprintf("w%d", w)
			for {
				ds, err := c.Read(t.Context(), coord.ReadArgs{Stream: "ev", Group: "g", Consumer: consumer, Max: 4})
				if !assertNoError(t, err) || len(ds) == 0 {
					return
				}
				mu.Lock()
				for _, d := range ds {
					if prev, dup := seen[d.ID]; dup {
						t.Errorf("event %s delivered to %s and %s", d.ID, prev, consumer)
					}
					seen[d.ID] = consumer
				}
				mu.Unlock()
				if !assertNoError(t, c.Ack(t.Context(), "ev", "g", receipts(ds)...)) {
					return
				}
			}
		})
	}
	wg.Wait()
	require.Len(t, seen, n)

	all := read(t, c, "ev", "other", "solo", n+10)
	require.Len(t, all, n)
	for i, d := range all {
		require.Equal(t, fmt.Sprintf("e%02d", i), d.ID, "publish order kept")
	}
}

func assertNoError(t *testing.T, err error) bool {
	if err != nil {
		t.Errorf("unexpected error: %v", err)
		return false
	}
	return true
}

func testEventsEarlier(t *testing.T, newCoord NewFunc) {
	c := newCoord(t, stable())
	id := publish(t, c, "s", coord.Event{Type: "early"})
	ds := read(t, c, "s", "late-group", "r", 5)
	require.Len(t, ds, 1)
	require.Equal(t, id, ds[0].ID)
}

func testEventsWait(t *testing.T, newCoord NewFunc) {
	c := newCoord(t, stable())
	// Create the group first so the blocked read is already waiting for new entries.
	require.Empty(t, read(t, c, "s", "g", "r", 1))
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		time.Sleep(100 * time.Millisecond)
		_, err := c.Publish(t.Context(), "s", coord.Event{ID: "late", Type: "t"})
		assertNoError(t, err)
	})
	start := time.Now()
	ds, err := c.Read(t.Context(), coord.ReadArgs{Stream: "s", Group: "g", Consumer: "r", Max: 1, Wait: 5 * time.Second})
	require.NoError(t, err)
	require.Len(t, ds, 1)
	require.Equal(t, "late", ds[0].ID)
	require.Less(t, time.Since(start), 3*time.Second, "read did not wake on publish")
}

func testEventsWaitTimeout(t *testing.T, newCoord NewFunc) {
	c := newCoord(t, stable())
	start := time.Now()
	ds, err := c.Read(t.Context(), coord.ReadArgs{Stream: "s", Group: "g", Consumer: "r", Wait: 150 * time.Millisecond})
	require.NoError(t, err)
	require.Empty(t, ds)
	require.GreaterOrEqual(t, time.Since(start), 140*time.Millisecond)
}

func testEventsMax(t *testing.T, newCoord NewFunc) {
	c := newCoord(t, stable())
	for i := range 5 {
		publish(t, c, "s", coord.Event{ID: fmt.Sprint(i), Type: "t"})
	}
	require.Len(t, read(t, c, "s", "g", "r", 0), 1, "zero max reads one")
	require.Len(t, read(t, c, "s", "g", "r", 3), 3)
	require.Len(t, read(t, c, "s", "g", "r", 3), 1)
}

func testEventsInvalid(t *testing.T, newCoord NewFunc) {
	c := newCoord(t, stable())
	ctx := t.Context()
	_, err := c.Publish(ctx, "", coord.Event{Type: "t"})
	require.ErrorIs(t, err, coord.ErrInvalid)
	for _, a := range []coord.ReadArgs{
		{Group: "g", Consumer: "c"},
		{Stream: "s", Consumer: "c"},
		{Stream: "s", Group: "g"},
	} {
		_, err := c.Read(ctx, a)
		require.ErrorIs(t, err, coord.ErrInvalid)
	}
}
