package numbers

import (
	"context"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// VoIPCheck is what a verifier needs to check that a trunk answers for a
// number.
type VoIPCheck struct {
	Number        string
	Host          string
	Port          int
	Transport     string
	Username      string
	Password      string
	OutboundProxy string
}

// VoIPResult is a verifier's verdict. Reason says why a check failed, in
// words for users. A check may cost money at some providers: the
// estimate is in USD cents with a note.
type VoIPResult struct {
	Verified            bool
	Reason              string
	ChargeEstimateCents int64
	ChargeNote          string
}

// VoIPVerifier checks a SIP trunk, typically with SIP OPTIONS. The
// telephony side implements it. An error means the check could not be
// made at all (not that the trunk failed it).
type VoIPVerifier interface {
	VerifyVoIP(ctx context.Context, check VoIPCheck) (VoIPResult, error)
}

type verifyView struct {
	PhoneNumberID          int64  `json:"phone_number_id"`
	Status                 string `json:"status"`
	VoIPVerificationStatus string `json:"voip_verification_status"`
	ChargeEstimateCents    int64  `json:"provider_charge_estimate_cents"`
	ChargeCurrency         string `json:"provider_charge_currency"`
	ChargeNote             string `json:"provider_charge_note"`
	Detail                 string `json:"detail"`
}

// verifyVoIP checks a VoIP number's trunk. Success marks it verified (and
// makes a number that had failed before active again); failure marks it
// failed and moves an active number to provisioning (spec section 3).
func (h *Service) verifyVoIP(c fiber.Ctx, p *storage.Principal) error {
	id, err := api.PathID(c, "phone_number_id")
	if err != nil {
		return err
	}
	ctx := c.Context()
	n, err := h.stores.Numbers.PhoneNumber(ctx, p.OrgID, id)
	if err != nil {
		return api.StoreErr(err)
	}
	if n.Source != storage.SourceVoIP || n.VoIPConnectionID == nil {
		return api.Err(http.StatusBadRequest, "Only VoIP numbers on a connection can be verified; demo numbers are routed by this service.")
	}
	if h.verifier == nil {
		return api.Err(http.StatusServiceUnavailable, "VoIP verification is not available: this server runs without its telephony front door.")
	}
	conn, err := h.stores.Trunks.VoIPConnection(ctx, p.OrgID, *n.VoIPConnectionID)
	if err != nil {
		return api.StoreErr(err)
	}
	vctx, cancel := context.WithTimeout(ctx, h.cfg.VerifyTimeout)
	res, err := h.verifier.VerifyVoIP(vctx, VoIPCheck{Number: n.Number, Host: conn.Host, Port: conn.Port, Transport: conn.Transport,
		Username: conn.Username, Password: conn.Password, OutboundProxy: conn.OutboundProxy})
	cancel()
	if err != nil {
		if h.log != nil {
			h.log.Warn("voip verification could not run", "phone_number_id", id, "err", err)
		}
		return api.Err(http.StatusBadGateway, "The trunk check could not be completed; try again.")
	}
	actor := p.MemberID
	n, err = h.stores.Numbers.UpdatePhoneNumber(ctx, p.OrgID, id, &actor, func(n *storage.PhoneNumber) error {
		if res.Verified {
			now := time.Now()
			n.VerificationStatus, n.LastVerifiedAt = storage.VerificationVerified, &now
			if n.Status == storage.NumberProvisioning {
				n.Status = storage.NumberActive
			}
			return nil
		}
		n.VerificationStatus = storage.VerificationFailed
		if n.Status == storage.NumberActive {
			n.Status = storage.NumberProvisioning
		}
		return nil
	})
	if err != nil {
		return api.StoreErr(err)
	}
	detail := "The trunk answered; the number is verified."
	if !res.Verified {
		detail = "The trunk did not answer the check."
		if res.Reason != "" {
			detail = res.Reason
		}
	}
	note := res.ChargeNote
	if note == "" {
		note = "No charge is expected for this check."
	}
	return c.JSON(verifyView{PhoneNumberID: n.ID, Status: n.Status, VoIPVerificationStatus: n.VerificationStatus,
		ChargeEstimateCents: res.ChargeEstimateCents, ChargeCurrency: "usd", ChargeNote: note, Detail: detail})
}
