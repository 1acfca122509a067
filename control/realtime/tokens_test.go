package realtime_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/control/realtime"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

func TestTokens(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		x := controltest.New(t, db)
		w := x.World()
		key := bytes.Repeat([]byte{3}, 32)
		noop := func(int64) {}

		_, err := realtime.NewTokens(nil, key, nil, noop)
		require.Error(t, err, "a store is required")
		_, err = realtime.NewTokens(x.Store.Calls, nil, nil, noop)
		require.Error(t, err, "a key is required")

		tk, err := realtime.NewTokens(x.Store.Calls, key, nil, noop)
		require.NoError(t, err)
		other, err := realtime.NewTokens(x.Store.Calls, bytes.Repeat([]byte{4}, 32), nil, noop)
		require.NoError(t, err)

		c, err := x.Store.Calls.CreateCall(ctx, storage.Call{OrgID: w.Org.ID, Direction: storage.DirectionWeb, Status: storage.CallInProgress})
		require.NoError(t, err)
		grant := []byte(`{"call":1}`)
		tok, exp, err := tk.Issue(ctx, c.ID, w.Org.ID, grant)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(tok, realtime.TokenPrefix), tok)
		require.WithinDuration(t, time.Now().Add(realtime.TokenTTL), exp, 2*time.Second)

		last := tok[len(tok)-1]
		flipped := byte('0')
		if last == '0' {
			flipped = '1'
		}
		for name, bad := range map[string]string{
			"forged signature": tok[:len(tok)-1] + string(flipped),
			"no prefix":        strings.TrimPrefix(tok, realtime.TokenPrefix),
			"no signature":     tok[:strings.LastIndexByte(tok, '.')],
			"empty":            "",
		} {
			_, err := tk.Claim(ctx, bad)
			require.ErrorIs(t, err, realtime.ErrInvalidToken, name)
		}
		_, err = other.Claim(ctx, tok)
		require.ErrorIs(t, err, realtime.ErrInvalidToken, "signed with another key")

		got, err := tk.Claim(ctx, tok)
		require.NoError(t, err)
		require.Equal(t, grant, got)
		_, err = tk.Claim(ctx, tok)
		require.ErrorIs(t, err, realtime.ErrInvalidToken, "redeemed once")
	})
}
