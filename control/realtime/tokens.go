package realtime

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/voiced/voiced/storage"
)

// ErrInvalidToken means a session token is malformed, forged, expired or
// already used.
var ErrInvalidToken = errors.New("realtime: invalid or expired session token")

// TokenTTL is how long a session token may wait for its socket.
const TokenTTL = time.Minute

// TokenPrefix starts session tokens (media/realtime.TokenPrefix).
const TokenPrefix = "rt_"

// Store keeps the tokens waiting for their sockets
// (storage.RealtimeSessionToken).
type Store interface {
	CreateRealtimeSessionToken(ctx context.Context, t storage.RealtimeSessionToken) error
	ClaimRealtimeSessionToken(ctx context.Context, callID int64, nonceHash string) (storage.RealtimeSessionToken, error)
	ExpireRealtimeSessionTokens(ctx context.Context) ([]int64, error)
}

// Tokens issues and redeems session tokens. Safe for concurrent use.
type Tokens struct {
	store Store
	key   []byte
	log   *slog.Logger
	// onExpire closes a call whose token expired unused.
	onExpire func(callID int64)
}

// NewTokens returns Tokens over store, signing with key. onExpire is
// called, once per token across replicas, for each call whose token
// expired unused.
func NewTokens(store Store, key []byte, log *slog.Logger, onExpire func(callID int64)) (*Tokens, error) {
	if store == nil || len(key) == 0 || onExpire == nil {
		return nil, errors.New("realtime: store, key and onExpire are required")
	}
	return &Tokens{store: store, key: key, log: log, onExpire: onExpire}, nil
}

// RandHex is n random bytes in hex.
func RandHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// sign signs a token payload.
func (t *Tokens) sign(payload string) string {
	m := hmac.New(sha256.New, t.key)
	m.Write([]byte("realtime\n" + payload))
	return hex.EncodeToString(m.Sum(nil))
}

// Issue stores grant for call callID of orgID until its socket claims it
// and returns the token and its expiry. A sweep after the expiry closes
// the calls whose tokens were never used.
func (t *Tokens) Issue(ctx context.Context, callID, orgID int64, grant []byte) (string, time.Time, error) {
	exp := time.Now().Add(TokenTTL)
	nonce := RandHex(12)
	if err := t.store.CreateRealtimeSessionToken(ctx, storage.RealtimeSessionToken{CallID: callID, OrgID: orgID,
		NonceHash: storage.HashToken(nonce), Grant: grant, ExpiresAt: exp}); err != nil {
		return "", time.Time{}, err
	}
	time.AfterFunc(TokenTTL+time.Second, t.expire)
	payload := strconv.FormatInt(callID, 10) + "." + strconv.FormatInt(exp.Unix(), 10) + "." + nonce
	return TokenPrefix + payload + "." + t.sign(payload), exp, nil
}

// expire hands the calls whose tokens expired unused to onExpire: this
// replica's and any other's (a replica that stopped before its sweep).
// Each expired token is swept by one replica.
func (t *Tokens) expire() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ids, err := t.store.ExpireRealtimeSessionTokens(ctx)
	if err != nil {
		if t.log != nil {
			t.log.Warn("expired realtime session tokens not swept", "err", err)
		}
		return
	}
	for _, id := range ids {
		t.onExpire(id)
	}
}

// Claim redeems a token once, before it expires, and returns its grant;
// anything else is ErrInvalidToken. Any replica sharing the database may
// redeem a token another issued.
func (t *Tokens) Claim(ctx context.Context, token string) ([]byte, error) {
	rest, ok := strings.CutPrefix(token, TokenPrefix)
	if !ok {
		return nil, ErrInvalidToken
	}
	i := strings.LastIndexByte(rest, '.')
	if i < 0 {
		return nil, ErrInvalidToken
	}
	payload, sig := rest[:i], rest[i+1:]
	if !hmac.Equal([]byte(sig), []byte(t.sign(payload))) {
		return nil, ErrInvalidToken
	}
	parts := strings.Split(payload, ".")
	if len(parts) != 3 {
		return nil, ErrInvalidToken
	}
	id, err1 := strconv.ParseInt(parts[0], 10, 64)
	exp, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil || time.Now().Unix() > exp {
		return nil, ErrInvalidToken
	}
	st, err := t.store.ClaimRealtimeSessionToken(ctx, id, storage.HashToken(parts[2]))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, ErrInvalidToken
	}
	if err != nil {
		return nil, err
	}
	return st.Grant, nil
}
