package calllog

import (
	"context"
	"errors"

	"github.com/voiced/voiced/storage"
)

// InboundTrunk returns the VoIP connection of number, false when the
// number is unknown or not on a VoIP connection.
func (l *Log[C]) InboundTrunk(ctx context.Context, number string) (InboundTrunk, bool, error) {
	n, err := l.st.Calls.PhoneNumberByE164(ctx, number)
	if errors.Is(err, storage.ErrNotFound) {
		return InboundTrunk{}, false, nil
	}
	if err != nil {
		return InboundTrunk{}, false, err
	}
	if n.Source != storage.SourceVoIP || n.VoIPConnectionID == nil {
		return InboundTrunk{}, false, nil
	}
	conn, err := l.st.Trunks.VoIPConnection(ctx, n.OrgID, *n.VoIPConnectionID)
	if err != nil {
		return InboundTrunk{}, false, err
	}
	return InboundTrunk{Trunk: trunkOf(conn), AllowedSources: conn.AllowedSources}, true, nil
}
