package control

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/storage"
)

// ts formats a timestamp as the API does: ISO 8601, UTC, milliseconds.
func ts(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func tsPtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := ts(*t)
	return &s
}

type orgView struct {
	ID        int64   `json:"id"`
	Name      string  `json:"name"`
	Role      *string `json:"role"`
	CreatedAt string  `json:"created_at"`
	UpdatedAt string  `json:"updated_at"`
}

func viewOrg(o storage.Org) orgView {
	v := orgView{ID: o.ID, Name: o.Name, CreatedAt: ts(o.CreatedAt), UpdatedAt: ts(o.UpdatedAt)}
	if o.Role != "" {
		r := string(o.Role)
		v.Role = &r
	}
	return v
}

type memberView struct {
	ID         int64  `json:"id"`
	Email      string `json:"email"`
	FirstName  string `json:"first_name"`
	LastName   string `json:"last_name"`
	Role       string `json:"role"`
	HasPasskey bool   `json:"has_passkey"`
	CreatedAt  string `json:"created_at"`
}

func viewMember(m storage.Member) memberView {
	return memberView{ID: m.ID, Email: m.Email, FirstName: m.FirstName, LastName: m.LastName, Role: string(m.Role), HasPasskey: m.HasPasskey, CreatedAt: ts(m.CreatedAt)}
}

type keyView struct {
	ID         string  `json:"id"`
	Name       string  `json:"name"`
	KeyPrefix  string  `json:"key_prefix"`
	IsActive   bool    `json:"is_active"`
	CreatedAt  string  `json:"created_at"`
	LastUsedAt *string `json:"last_used_at"`
	RevokedAt  *string `json:"revoked_at"`
	Key        string  `json:"key,omitempty"`
}

func viewKey(k storage.APIKey) keyView {
	return keyView{ID: k.ID, Name: k.Name, KeyPrefix: k.KeyPrefix, IsActive: k.RevokedAt == nil, CreatedAt: ts(k.CreatedAt), LastUsedAt: tsPtr(k.LastUsedAt), RevokedAt: tsPtr(k.RevokedAt)}
}

type webhookView struct {
	URL       string `json:"url"`
	Secret    string `json:"secret"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

type inviteView struct {
	ID         string  `json:"id"`
	OrgID      int64   `json:"org_id"`
	OrgName    string  `json:"org_name"`
	Email      string  `json:"email"`
	Role       string  `json:"role"`
	Status     string  `json:"status"`
	CreatedAt  string  `json:"created_at"`
	ExpiresAt  string  `json:"expires_at"`
	AcceptedAt *string `json:"accepted_at"`
	RevokedAt  *string `json:"revoked_at"`
	Token      string  `json:"token,omitempty"`
	InviteURL  string  `json:"invite_url,omitempty"`
}

func viewInvite(i storage.Invite, now time.Time) inviteView {
	return inviteView{ID: i.ID, OrgID: i.OrgID, OrgName: i.OrgName, Email: i.Email, Role: string(i.Role), Status: i.Status(now),
		CreatedAt: ts(i.CreatedAt), ExpiresAt: ts(i.ExpiresAt), AcceptedAt: tsPtr(i.AcceptedAt), RevokedAt: tsPtr(i.RevokedAt)}
}

// pathID parses a positive integer path parameter; anything else is a 404
// (no such resource), not a 400, because ids are opaque to clients.
func pathID(c fiber.Ctx, name string) (int64, error) {
	id, err := strconv.ParseInt(c.Params(name), 10, 64)
	if err != nil || id <= 0 {
		return 0, errNotFound
	}
	return id, nil
}

// storeErr maps the store's common errors; handlers map rule errors whose
// status depends on the endpoint before calling it.
func storeErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, storage.ErrNotFound), errors.Is(err, storage.ErrNotMember):
		return errNotFound
	case errors.Is(err, storage.ErrRole):
		return errForbidden
	case errors.Is(err, storage.ErrConflict):
		return apiErr(http.StatusConflict, "The request conflicts with the current state; retry.")
	}
	return err
}
