package sip

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
)

// TrunkCheck is the verdict of VerifyTrunk. Reason is written for users.
type TrunkCheck struct {
	OK     bool
	Code   int
	Reason string
}

// VerifyTrunk checks that a trunk answers SIP for number with an OPTIONS
// request (answering a digest challenge when the trunk has a password).
// A 2xx verifies it, and so does 405 or 501 (the server is there, it
// just does not take OPTIONS). An error means the check could not be
// made at all (server closed, no listener); a trunk that does not answer
// is a failed check, not an error.
func (s *Server) VerifyTrunk(ctx context.Context, tr Trunk, number string) (TrunkCheck, error) {
	transport, host, port, hop, err := tr.target()
	if err != nil {
		return TrunkCheck{Reason: "The trunk settings are unusable: " + err.Error()}, nil
	}
	t := s.anyTransport(transport)
	if t == nil {
		return TrunkCheck{}, fmt.Errorf("%w: no SIP listener", ErrClosed)
	}
	client, err := s.clientFor(t, transport)
	if err != nil {
		return TrunkCheck{}, err
	}
	uri := sip.Uri{Scheme: "sip", User: number, Host: host, Port: port}
	if transport != "UDP" {
		uri.UriParams = sip.NewParams()
		uri.UriParams.Add("transport", strings.ToLower(transport))
	}
	req := sip.NewRequest(sip.OPTIONS, uri)
	user := tr.Username
	if user == "" {
		user = number
	}
	from := sip.FromHeader{Address: sip.Uri{Scheme: "sip", User: user, Host: host}, Params: sip.NewParams()}
	from.Params.Add("tag", sip.GenerateTagN(16))
	req.AppendHeader(&from)
	req.AppendHeader(&sip.ToHeader{Address: sip.Uri{Scheme: "sip", User: number, Host: host}})
	req.AppendHeader(t.contact.Clone())
	req.AppendHeader(sip.NewHeader("Accept", "application/sdp"))
	req.AppendHeader(sip.NewHeader("User-Agent", s.cfg.UserAgent))
	req.SetTransport(transport)
	req.SetDestination(hop)
	where := hop + " over " + strings.ToLower(transport)
	res, err := client.Do(ctx, req)
	if err == nil && (res.StatusCode == 401 || res.StatusCode == 407) && tr.Password != "" {
		next, aerr := authorize(req, res, tr)
		if aerr != nil {
			return TrunkCheck{Code: res.StatusCode, Reason: "The trunk asks for an authentication scheme we do not support."}, nil
		}
		res, err = client.Do(ctx, next, sipgo.ClientRequestAddVia)
	}
	if err != nil {
		var dnsErr *net.DNSError
		switch {
		case s.ctx.Err() != nil:
			return TrunkCheck{}, ErrClosed
		case errors.As(err, &dnsErr):
			return TrunkCheck{Reason: "The trunk host " + host + " does not resolve."}, nil
		}
		return TrunkCheck{Reason: "The trunk did not answer at " + where + "."}, nil
	}
	code := res.StatusCode
	switch {
	case res.IsSuccess():
		return TrunkCheck{OK: true, Code: code, Reason: "The trunk answered."}, nil
	case code == 405 || code == 501:
		return TrunkCheck{OK: true, Code: code, Reason: "The trunk answered (it does not take OPTIONS)."}, nil
	case code == 401 || code == 407:
		if tr.Password == "" {
			return TrunkCheck{Code: code, Reason: "The trunk asks for credentials; set the connection's username and password."}, nil
		}
		return TrunkCheck{Code: code, Reason: "The trunk refused the connection's username or password."}, nil
	case code == 403:
		return TrunkCheck{Code: code, Reason: "The trunk refused this server; allow its address at the provider."}, nil
	case code == 404 || code == 484 || code == 604:
		return TrunkCheck{Code: code, Reason: "The trunk does not know the number " + number + "."}, nil
	}
	return TrunkCheck{Code: code, Reason: fmt.Sprintf("The trunk answered %d %s.", code, res.Reason)}, nil
}
