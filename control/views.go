package control

import (
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// ts formats a timestamp as the API does (api.TS).
func ts(t time.Time) string { return api.TS(t) }

func tsPtr(t *time.Time) *string { return api.TSPtr(t) }

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

// pathID parses a positive integer path parameter (api.PathID).
func pathID(c fiber.Ctx, name string) (int64, error) { return api.PathID(c, name) }

// storeErr maps the store's common errors (api.StoreErr).
func storeErr(err error) error { return api.StoreErr(err) }
