package numbers

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// TrunkCodecs are the codecs a trunk may offer; the media engine speaks
// these.
var TrunkCodecs = []string{"PCMU", "PCMA", "opus"}

var hostRe = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$`)

// validHost accepts a DNS name or an IP address.
func validHost(h string) bool {
	return len(h) <= 253 && (net.ParseIP(h) != nil || hostRe.MatchString(h))
}

type voipView struct {
	ID                      int64    `json:"id"`
	Name                    string   `json:"name"`
	Host                    string   `json:"host"`
	Port                    int      `json:"port"`
	Transport               string   `json:"transport"`
	Username                string   `json:"username"`
	HasPassword             bool     `json:"has_password"`
	OutboundProxy           string   `json:"outbound_proxy"`
	AllowedInboundAddresses []string `json:"allowed_inbound_addresses"`
	Codecs                  []string `json:"codecs"`
	PhoneNumberCount        int64    `json:"phone_number_count"`
	CreatedAt               string   `json:"created_at"`
	UpdatedAt               string   `json:"updated_at"`
}

func viewVoIP(v storage.VoIPConnection) voipView {
	return voipView{ID: v.ID, Name: v.Name, Host: v.Host, Port: v.Port, Transport: v.Transport, Username: v.Username,
		HasPassword: v.Password != "", OutboundProxy: v.OutboundProxy, AllowedInboundAddresses: api.NonNil(v.AllowedSources),
		Codecs: api.NonNil(v.Codecs), PhoneNumberCount: v.Numbers, CreatedAt: api.TS(v.CreatedAt), UpdatedAt: api.TS(v.UpdatedAt)}
}

type voipInput struct {
	Name                    *string   `json:"name"`
	Host                    *string   `json:"host"`
	Port                    *int      `json:"port"`
	Transport               *string   `json:"transport"`
	Username                *string   `json:"username"`
	Password                *string   `json:"password"`
	OutboundProxy           *string   `json:"outbound_proxy"`
	AllowedInboundAddresses *[]string `json:"allowed_inbound_addresses"`
	Codecs                  *[]string `json:"codecs"`
}

// apply writes the given fields over v and validates the result. A port
// left unset follows the transport (5061 for TLS, else 5060).
func (in voipInput) apply(v *storage.VoIPConnection, f api.Fields, passwordNull bool) {
	if in.Host != nil {
		v.Host = strings.TrimSpace(*in.Host)
	}
	if !validHost(v.Host) {
		f.Add("host", "Must be a host name or IP address, such as sip.example.com.")
	}
	if in.Name != nil {
		v.Name = f.Name("name", in.Name, true, 100)
	} else if v.Name == "" {
		v.Name = v.Host
	}
	if in.Transport != nil {
		v.Transport = strings.ToLower(strings.TrimSpace(*in.Transport))
	}
	if m := api.OneOf(v.Transport, []string{"udp", "tcp", "tls"}); m != "" {
		f.Add("transport", m)
	}
	switch {
	case in.Port != nil:
		v.Port = *in.Port
	case v.Port == 0 && v.Transport == "tls":
		v.Port = 5061
	case v.Port == 0:
		v.Port = 5060
	}
	if v.Port < 1 || v.Port > 65535 {
		f.Add("port", "Must be from 1 to 65535.")
	}
	if in.Username != nil {
		v.Username = strings.TrimSpace(*in.Username)
		if m := api.TooLong(v.Username, 128); m != "" {
			f.Add("username", m)
		}
	}
	if passwordNull {
		v.Password = ""
	} else if in.Password != nil {
		v.Password = *in.Password
		if m := api.TooLong(v.Password, 128); m != "" {
			f.Add("password", m)
		}
	}
	if in.OutboundProxy != nil {
		v.OutboundProxy = strings.TrimSpace(*in.OutboundProxy)
		if v.OutboundProxy != "" && !validHostPort(v.OutboundProxy) {
			f.Add("outbound_proxy", "Must be host or host:port, such as proxy.example.com:5060.")
		}
	}
	if in.AllowedInboundAddresses != nil {
		v.AllowedSources = []string{}
		for _, a := range *in.AllowedInboundAddresses {
			a = strings.TrimSpace(a)
			if ip := net.ParseIP(a); ip != nil {
				v.AllowedSources = append(v.AllowedSources, ip.String())
			} else if _, n, err := net.ParseCIDR(a); err == nil {
				v.AllowedSources = append(v.AllowedSources, n.String())
			} else {
				f.Add("allowed_inbound_addresses", `"`+a+`" is not an IP address or CIDR range.`)
			}
		}
		if len(v.AllowedSources) > 50 {
			f.Add("allowed_inbound_addresses", "Ensure this list has no more than 50 entries.")
		}
	}
	if in.Codecs != nil {
		v.Codecs = []string{}
		for _, c := range *in.Codecs {
			i := slices.IndexFunc(TrunkCodecs, func(k string) bool { return strings.EqualFold(k, strings.TrimSpace(c)) })
			if i < 0 {
				f.Add("codecs", `"`+c+`" is not supported; use PCMU, PCMA or opus.`)
			} else if !slices.Contains(v.Codecs, TrunkCodecs[i]) {
				v.Codecs = append(v.Codecs, TrunkCodecs[i])
			}
		}
	}
	if len(v.Codecs) == 0 {
		f.Add("codecs", "List at least one codec.")
	}
}

func validHostPort(s string) bool {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return validHost(s)
	}
	p, err := strconv.Atoi(port)
	return err == nil && p > 0 && p < 65536 && validHost(host)
}

// decodeVoIP decodes a connection body and reports whether password was
// an explicit null.
func decodeVoIP(c fiber.Ctx) (voipInput, bool, error) {
	var in voipInput
	if err := api.Decode(c, &in); err != nil {
		return in, false, err
	}
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(c.Body(), &raw)
	return in, string(raw["password"]) == "null", nil
}

func (h *Service) listVoIP(c fiber.Ctx, p *storage.Principal) error {
	vs, err := h.stores.Trunks.VoIPConnections(c.Context(), p.OrgID)
	if err != nil {
		return err
	}
	out := make([]voipView, len(vs))
	for i, v := range vs {
		out[i] = viewVoIP(v)
	}
	return c.JSON(out)
}

func (h *Service) createVoIP(c fiber.Ctx, p *storage.Principal) error {
	in, pwNull, err := decodeVoIP(c)
	if err != nil {
		return err
	}
	f := api.Fields{}
	if in.Host == nil {
		f.Add("host", "This field is required.")
		return f.Err()
	}
	v := storage.VoIPConnection{OrgID: p.OrgID, Transport: "udp", Codecs: []string{"PCMU", "PCMA"}, AllowedSources: []string{}}
	in.apply(&v, f, pwNull)
	if err := f.Err(); err != nil {
		return err
	}
	v, err = h.stores.Trunks.CreateVoIPConnection(c.Context(), v)
	if err != nil {
		return api.StoreErr(err)
	}
	return c.Status(http.StatusCreated).JSON(viewVoIP(v))
}

func (h *Service) getVoIP(c fiber.Ctx, p *storage.Principal) error {
	id, err := api.PathID(c, "connection_id")
	if err != nil {
		return err
	}
	v, err := h.stores.Trunks.VoIPConnection(c.Context(), p.OrgID, id)
	if err != nil {
		return api.StoreErr(err)
	}
	return c.JSON(viewVoIP(v))
}

func (h *Service) patchVoIP(c fiber.Ctx, p *storage.Principal) error {
	id, err := api.PathID(c, "connection_id")
	if err != nil {
		return err
	}
	in, pwNull, err := decodeVoIP(c)
	if err != nil {
		return err
	}
	v, err := h.stores.Trunks.UpdateVoIPConnection(c.Context(), p.OrgID, id, func(v *storage.VoIPConnection) error {
		f := api.Fields{}
		in.apply(v, f, pwNull)
		return f.Err()
	})
	if err != nil {
		return api.StoreErr(err)
	}
	return c.JSON(viewVoIP(v))
}

func (h *Service) deleteVoIP(c fiber.Ctx, p *storage.Principal) error {
	id, err := api.PathID(c, "connection_id")
	if err != nil {
		return err
	}
	err = h.stores.Trunks.DeleteVoIPConnection(c.Context(), p.OrgID, id)
	if errors.Is(err, storage.ErrInUse) {
		return api.Err(http.StatusConflict, "Phone numbers are still on this connection; delete them first.")
	}
	if err != nil {
		return api.StoreErr(err)
	}
	return c.SendStatus(http.StatusNoContent)
}

// importVoIPNumber adds one VoIP number on connection connID of p's org.
// It starts active and unverified: calls can flow at once, and a failed
// verify-voip moves it to provisioning (spec section 3).
func (h *Service) importVoIPNumber(c fiber.Ctx, p *storage.Principal, connID *int64, number *string, label string) (storage.PhoneNumber, error) {
	f := api.Fields{}
	if number == nil || !ValidE164(strings.TrimSpace(*number)) {
		f.Add("number", "Must be an E.164 number like +14155550100.")
	}
	if connID == nil {
		f.Add("voip_connection_id", "This field is required for VoIP numbers.")
	}
	if err := f.Err(); err != nil {
		return storage.PhoneNumber{}, err
	}
	actor := p.MemberID
	n, err := h.stores.Imports.CreatePhoneNumber(c.Context(), storage.PhoneNumber{OrgID: p.OrgID, Number: strings.TrimSpace(*number), Label: label,
		Source: storage.SourceVoIP, Status: storage.NumberActive, VoIPConnectionID: connID}, &actor)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return n, api.FieldErr("voip_connection_id", "VoIP connection not found in this organization.")
	case errors.Is(err, storage.ErrConflict):
		return n, api.Err(http.StatusConflict, "The number "+strings.TrimSpace(*number)+" is already in use on this service.")
	}
	return n, err
}

type voipImportInput struct {
	Numbers *[]string `json:"numbers"`
	Label   *string   `json:"label"`
}

func (h *Service) importVoIPNumbers(c fiber.Ctx, p *storage.Principal) error {
	id, err := api.PathID(c, "connection_id")
	if err != nil {
		return err
	}
	var in voipImportInput
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	f := api.Fields{}
	label := numberLabel(f, in.Label)
	if in.Numbers == nil || len(*in.Numbers) == 0 || len(*in.Numbers) > 100 {
		f.Add("numbers", "List 1 to 100 E.164 numbers.")
	} else {
		for _, n := range *in.Numbers {
			if !ValidE164(strings.TrimSpace(n)) {
				f.Add("numbers", `"`+n+`" is not an E.164 number like +14155550100.`)
			}
		}
	}
	if err := f.Err(); err != nil {
		return err
	}
	ctx := c.Context()
	if _, err := h.stores.Trunks.VoIPConnection(ctx, p.OrgID, id); err != nil {
		return api.StoreErr(err)
	}
	ns := make([]storage.PhoneNumber, len(*in.Numbers))
	for i, n := range *in.Numbers {
		ns[i] = storage.PhoneNumber{OrgID: p.OrgID, Number: strings.TrimSpace(n), Label: label, Source: storage.SourceVoIP, Status: storage.NumberActive, VoIPConnectionID: &id}
	}
	actor := p.MemberID
	out, err := h.stores.Imports.CreatePhoneNumbers(ctx, ns, &actor)
	switch {
	case errors.Is(err, storage.ErrConflict):
		return api.Err(http.StatusConflict, "At least one of these numbers is already in use on this service; nothing was imported.")
	case err != nil:
		return api.StoreErr(err)
	}
	views := make([]numberView, len(out))
	for i, n := range out {
		views[i] = viewNumber(n)
	}
	return c.Status(http.StatusCreated).JSON(views)
}
