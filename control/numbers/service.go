package numbers

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// NumberStore reads and changes an organization's phone numbers.
type NumberStore interface {
	PhoneNumbers(ctx context.Context, orgID int64) ([]storage.PhoneNumber, error)
	PhoneNumber(ctx context.Context, orgID, id int64) (storage.PhoneNumber, error)
	UpdatePhoneNumber(ctx context.Context, orgID, id int64, actor *int64, fn func(n *storage.PhoneNumber) error) (storage.PhoneNumber, error)
	DeletePhoneNumber(ctx context.Context, orgID, id int64) error
	PhoneNumberVersions(ctx context.Context, orgID, id int64, limit int) (int64, []storage.Version, error)
}

// DemoStore hands out the operator's demo numbers and finds the ones
// still provisioning.
type DemoStore interface {
	HeldNumbers(ctx context.Context, numbers []string) (map[string]bool, error)
	CreateDemoNumber(ctx context.Context, orgID int64, actor *int64, candidates []storage.PhoneNumber) (storage.PhoneNumber, error)
	NumbersInStatus(ctx context.Context, source, status string, limit int) ([]storage.PhoneNumber, error)
}

// ImportStore adds numbers from the organization's own SIP trunks.
type ImportStore interface {
	CreatePhoneNumber(ctx context.Context, n storage.PhoneNumber, actor *int64) (storage.PhoneNumber, error)
	CreatePhoneNumbers(ctx context.Context, ns []storage.PhoneNumber, actor *int64) ([]storage.PhoneNumber, error)
}

// TransferStore moves a demo number to another organization.
type TransferStore interface {
	TransferPhoneNumber(ctx context.Context, fromOrg, toOrg, id, userID int64) (storage.PhoneNumber, bool, error)
}

// LabelStore keeps the labels of E.164 numbers.
type LabelStore interface {
	NumberLabels(ctx context.Context, orgID int64) ([]storage.NumberLabel, error)
	UpsertNumberLabel(ctx context.Context, orgID int64, number, label string) (storage.NumberLabel, error)
	DeleteNumberLabel(ctx context.Context, orgID, id int64) error
}

// TrunkStore keeps the organization's SIP trunks (VoIP connections).
type TrunkStore interface {
	VoIPConnections(ctx context.Context, orgID int64) ([]storage.VoIPConnection, error)
	VoIPConnection(ctx context.Context, orgID, id int64) (storage.VoIPConnection, error)
	CreateVoIPConnection(ctx context.Context, v storage.VoIPConnection) (storage.VoIPConnection, error)
	UpdateVoIPConnection(ctx context.Context, orgID, id int64, fn func(v *storage.VoIPConnection) error) (storage.VoIPConnection, error)
	DeleteVoIPConnection(ctx context.Context, orgID, id int64) error
}

// AgentLookup checks that an agent assigned to a number is the org's.
type AgentLookup interface {
	Agent(ctx context.Context, orgID, id int64) (storage.Agent, error)
}

// Stores are the storage the numbers domain uses, one small interface per
// concern; all are required.
type Stores struct {
	Numbers   NumberStore
	Demo      DemoStore
	Imports   ImportStore
	Transfers TransferStore
	Labels    LabelStore
	Trunks    TrunkStore
	Agents    AgentLookup
}

// Config holds the numbers domain's settings. Zero values mean defaults.
type Config struct {
	// DIDPool lists the operator's demo numbers.
	DIDPool []DID
	// VerifyTimeout bounds one verify-voip check. Default 20 s.
	VerifyTimeout time.Duration
}

// Service serves phone numbers, their labels and SIP trunks, and
// provisions demo numbers.
type Service struct {
	cfg      Config
	log      *slog.Logger
	stores   Stores
	pool     *didPool
	verifier VoIPVerifier
}

// New builds the numbers domain. verifier may be nil: verify-voip then
// answers 503. The pool is validated here.
func New(cfg Config, log *slog.Logger, stores Stores, verifier VoIPVerifier) (*Service, error) {
	if stores.Numbers == nil || stores.Demo == nil || stores.Imports == nil || stores.Transfers == nil ||
		stores.Labels == nil || stores.Trunks == nil || stores.Agents == nil {
		return nil, fmt.Errorf("numbers: every store is required")
	}
	if cfg.VerifyTimeout == 0 {
		cfg.VerifyTimeout = 20 * time.Second
	}
	pool, err := newDIDPool(cfg.DIDPool)
	if err != nil {
		return nil, err
	}
	return &Service{cfg: cfg, log: log, stores: stores, pool: pool, verifier: verifier}, nil
}

// Routes returns the phone number, number label and VoIP connection routes.
func (h *Service) Routes() []api.Route {
	return []api.Route{
		{Method: "GET", Path: "/v1/phone-numbers", Summary: "List phone numbers, newest first", Tag: "numbers", Auth: api.AuthOrg, ResSchema: "PhoneNumber", ResList: true, Handler: h.listNumbers},
		{Method: "POST", Path: "/v1/phone-numbers", Summary: "Get a demo number from the pool (area_code, city, state filters), or import a VoIP number (source voip, admin+); 409 when the pool has none", Tag: "numbers", Auth: api.AuthOrg, ReqSchema: "PhoneNumberInput", ResSchema: "PhoneNumber", ResStatus: 201, Errors: []int{400, 403, 409}, Handler: h.createNumber},
		{Method: "GET", Path: "/v1/phone-numbers/:phone_number_id", Summary: "Get a phone number", Tag: "numbers", Auth: api.AuthOrg, ResSchema: "PhoneNumber", Errors: []int{404}, Handler: h.getNumber},
		{Method: "PUT", Path: "/v1/phone-numbers/:phone_number_id", Summary: "Assign agents, label, or set status active/released (release clears both assignments)", Tag: "numbers", Auth: api.AuthOrg, ReqSchema: "PhoneNumberUpdate", ResSchema: "PhoneNumber", Errors: []int{400, 404, 409}, Handler: h.updateNumber},
		{Method: "PATCH", Path: "/v1/phone-numbers/:phone_number_id", Summary: "Assign agents, label, or set status active/released (release clears both assignments)", Tag: "numbers", Auth: api.AuthOrg, ReqSchema: "PhoneNumberUpdate", ResSchema: "PhoneNumber", Errors: []int{400, 404, 409}, Handler: h.updateNumber},
		{Method: "DELETE", Path: "/v1/phone-numbers/:phone_number_id", Summary: "Delete a number: demo numbers return to the pool, VoIP numbers detach", Tag: "numbers", Auth: api.AuthOrg, ResStatus: 204, Errors: []int{404}, Handler: h.deleteNumber},
		{Method: "POST", Path: "/v1/phone-numbers/:phone_number_id/transfer", Summary: "Move a demo number to another organization (admin+ in both); assignments are cleared", Tag: "numbers", Auth: api.AuthOrg, MinRole: storage.RoleAdmin, ReqSchema: "TransferInput", ResSchema: "NumberTransfer", Errors: []int{400, 403, 404}, Handler: h.transferNumber},
		{Method: "GET", Path: "/v1/phone-numbers/:phone_number_id/versions", Summary: "Versions of a number, newest first (query limit, default 20, max 100)", Tag: "numbers", Auth: api.AuthOrg, ResSchema: "VersionList", Errors: []int{400, 404}, Handler: h.numberVersions},
		{Method: "POST", Path: "/v1/phone-numbers/:phone_number_id/verify-voip", Summary: "Check a VoIP number's trunk (SIP OPTIONS); failure moves an active number to provisioning", Tag: "numbers", Auth: api.AuthOrg, ResSchema: "VoIPVerification", Errors: []int{400, 404, 502, 503}, Handler: h.verifyVoIP},
		{Method: "GET", Path: "/v1/phone-number-labels", Summary: "List number labels by phone number", Tag: "numbers", Auth: api.AuthOrg, ResSchema: "NumberLabel", ResList: true, Handler: h.listLabels},
		{Method: "POST", Path: "/v1/phone-number-labels", Summary: "Set the label of an E.164 number (upsert; 200 for insert and update)", Tag: "numbers", Auth: api.AuthOrg, ReqSchema: "NumberLabelInput", ResSchema: "NumberLabel", Errors: []int{400}, Handler: h.upsertLabel},
		{Method: "DELETE", Path: "/v1/phone-number-labels/:label_id", Summary: "Delete a number label", Tag: "numbers", Auth: api.AuthOrg, ResStatus: 204, Errors: []int{404}, Handler: h.deleteLabel},
		{Method: "GET", Path: "/v1/voip-connections", Summary: "List SIP trunks, newest first (passwords are never returned)", Tag: "voip", Auth: api.AuthOrg, ResSchema: "VoIPConnection", ResList: true, Handler: h.listVoIP},
		{Method: "POST", Path: "/v1/voip-connections", Summary: "Create a SIP trunk (admin+)", Tag: "voip", Auth: api.AuthOrg, MinRole: storage.RoleAdmin, ReqSchema: "VoIPConnectionInput", ResSchema: "VoIPConnection", ResStatus: 201, Errors: []int{400, 403}, Handler: h.createVoIP},
		{Method: "GET", Path: "/v1/voip-connections/:connection_id", Summary: "Get a SIP trunk", Tag: "voip", Auth: api.AuthOrg, ResSchema: "VoIPConnection", Errors: []int{404}, Handler: h.getVoIP},
		{Method: "PATCH", Path: "/v1/voip-connections/:connection_id", Summary: "Change a SIP trunk (admin+); password is write-only, null or empty clears it", Tag: "voip", Auth: api.AuthOrg, MinRole: storage.RoleAdmin, ReqSchema: "VoIPConnectionInput", ResSchema: "VoIPConnection", Errors: []int{400, 403, 404}, Handler: h.patchVoIP},
		{Method: "DELETE", Path: "/v1/voip-connections/:connection_id", Summary: "Delete a SIP trunk (admin+); 409 while numbers are on it", Tag: "voip", Auth: api.AuthOrg, MinRole: storage.RoleAdmin, ResStatus: 204, Errors: []int{403, 404, 409}, Handler: h.deleteVoIP},
		{Method: "POST", Path: "/v1/voip-connections/:connection_id/numbers", Summary: "Import numbers onto a SIP trunk (admin+); all or none", Tag: "voip", Auth: api.AuthOrg, MinRole: storage.RoleAdmin, ReqSchema: "VoIPImportInput", ResSchema: "PhoneNumber", ResList: true, ResStatus: 201, Errors: []int{400, 403, 404, 409}, Handler: h.importVoIPNumbers},
	}
}
