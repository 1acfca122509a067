package coord_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/storage/coord"
)

func TestLessLoaded(t *testing.T) {
	const hot = 0.9
	for _, tc := range []struct {
		name string
		a, b coord.Node
		want bool
	}{
		{"fewer calls", coord.Node{Calls: 1}, coord.Node{Calls: 2}, true},
		{"more calls", coord.Node{Calls: 3}, coord.Node{Calls: 2}, false},
		{"equal calls lower cpu", coord.Node{Calls: 2, CPU: 0.1}, coord.Node{Calls: 2, CPU: 0.2}, true},
		{"saturated loses despite fewer calls", coord.Node{Calls: 0, CPU: 0.9}, coord.Node{Calls: 50, CPU: 0.5}, false},
		{"cool beats saturated", coord.Node{Calls: 50, CPU: 0.5}, coord.Node{Calls: 0, CPU: 0.95}, true},
		{"both saturated fewer calls", coord.Node{Calls: 1, CPU: 0.99}, coord.Node{Calls: 2, CPU: 0.91}, true},
		{"full tie", coord.Node{Calls: 2, CPU: 0.5}, coord.Node{Calls: 2, CPU: 0.5}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, coord.LessLoaded(tc.a, tc.b, hot))
		})
	}
}

func TestChooseDrawsDistinctPair(t *testing.T) {
	nodes := []coord.Node{{ID: "a", Calls: 3}, {ID: "x", Draining: true}, {ID: "b", Calls: 1}, {ID: "c", Calls: 2}}
	// Every (i, j) draw over the three candidates a, b, c: the winner is the less
	// loaded of two distinct nodes, never a node against itself.
	want := map[[2]int]string{
		{0, 0}: "b", {0, 1}: "c", // a vs b, a vs c
		{1, 0}: "b", {1, 1}: "b", // b vs a, b vs c
		{2, 0}: "c", {2, 1}: "b", // c vs a, c vs b
	}
	for draw, id := range want {
		seq := []int{draw[0], draw[1]}
		n, err := coord.Choose(nodes, 0.9, func(int) int { v := seq[0]; seq = seq[1:]; return v })
		require.NoError(t, err)
		require.Equal(t, id, n.ID, "draw %v", draw)
	}
	_, err := coord.Choose([]coord.Node{{ID: "d", Draining: true}}, 0.9, nil)
	require.ErrorIs(t, err, coord.ErrNoNodes)
}

func TestOrgKey(t *testing.T) {
	require.Equal(t, "org:o1:simulations", coord.OrgKey("o1", "simulations"))
	require.NotEqual(t, coord.OrgKey("o1", "a"), coord.OrgKey("o2", "a"))
}

func TestCheckKey(t *testing.T) {
	require.NoError(t, coord.CheckKey("k", "x", 0, false))
	require.NoError(t, coord.CheckKey("k", "x", 1e6, true))
	require.ErrorIs(t, coord.CheckKey("k", "", 0, false), coord.ErrInvalid)
	require.ErrorIs(t, coord.CheckKey("k", "x", 0, true), coord.ErrInvalid)
	require.ErrorIs(t, coord.CheckKey("k", "x", -1, false), coord.ErrInvalid)
	require.ErrorIs(t, coord.CheckKey("k", "x", 1000, false), coord.ErrInvalid, "below 1ms")
}
