package control

import (
	"context"
	"errors"

	"github.com/voiced/voiced/storage"
)

// Call directions as the live call (package call) names them in an
// AdmitRequest; the same strings as the stored call's direction.
const (
	DirectionInbound  = storage.DirectionInbound
	DirectionOutbound = storage.DirectionOutbound
	DirectionTest     = storage.DirectionTest
	DirectionWeb      = storage.DirectionWeb
)

// InboundTrunk is a number's VoIP connection as the SIP side needs it: the
// connection takes calls from its allowed addresses (IPs or CIDRs, as
// stored) and its host, and transfers of its calls dial out through it.
type InboundTrunk struct {
	Trunk
	// AllowedSources are the connection's allowed IPs and CIDRs.
	AllowedSources []string
}

// InboundTrunk returns the VoIP connection of number, false when the
// number is unknown or not on a VoIP connection.
func (l *CallLog) InboundTrunk(ctx context.Context, number string) (InboundTrunk, bool, error) {
	st := l.s.store
	n, err := st.Calls.PhoneNumberByE164(ctx, number)
	if errors.Is(err, storage.ErrNotFound) {
		return InboundTrunk{}, false, nil
	}
	if err != nil {
		return InboundTrunk{}, false, err
	}
	if n.Source != storage.SourceVoIP || n.VoIPConnectionID == nil {
		return InboundTrunk{}, false, nil
	}
	conn, err := st.Numbers.VoIPConnection(ctx, n.OrgID, *n.VoIPConnectionID)
	if err != nil {
		return InboundTrunk{}, false, err
	}
	return InboundTrunk{Trunk: Trunk{Host: conn.Host, Port: conn.Port, Transport: conn.Transport, Username: conn.Username,
		Password: conn.Password, OutboundProxy: conn.OutboundProxy, Codecs: conn.Codecs}, AllowedSources: conn.AllowedSources}, true, nil
}
