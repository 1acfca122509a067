package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/mcp"
	"github.com/voiced/voiced/control/realtime"
	"github.com/voiced/voiced/control/webhook"
)

// Prefix is the internal API's path prefix.
const Prefix = "/internal/v1/"

// NodeHeader names the media node a request comes from (its registry
// id): the calls it admits or claims are recorded as its own.
const NodeHeader = "Voiced-Node"

// The API's paths under Prefix: one POST per call.Control method, and
// PUT blobs/<key> for a blob.
const (
	pathAdmit       = "admit"
	pathAdmitInline = "admit-inline"
	pathAppend      = "append"
	pathToolEvent   = "tool-event"
	pathAnswered    = "answered"
	pathFinish      = "finish"
	pathFail        = "fail"
	pathTool        = "tool"
	pathTrunk       = "inbound-trunk"
	pathAPIKey      = "authenticate-api-key"
	pathClaim       = "claim-realtime-token"
	pathMCPServers  = "mcp-servers"
	pathKnowledge   = "search-knowledge"
	pathBlobs       = "blobs/"
	pathPing        = "ping"
	pathNodeStart   = "node-start"
)

// Request bodies of the calls whose arguments are not one struct.
type (
	admitInlineReq struct {
		OrgID  int64           `json:"org_id"`
		Config json.RawMessage `json:"config"`
		Room   string          `json:"room"`
	}
	appendReq struct {
		CallID int64               `json:"call_id"`
		Events []calllog.CallEvent `json:"events"`
	}
	toolEventReq struct {
		CallID int64           `json:"call_id"`
		Run    calllog.ToolRun `json:"run"`
	}
	answeredReq struct {
		CallID int64     `json:"call_id"`
		At     time.Time `json:"at"`
	}
	finishReq struct {
		CallID int64           `json:"call_id"`
		End    calllog.CallEnd `json:"end"`
	}
	failReq struct {
		CallID int64  `json:"call_id"`
		Reason string `json:"reason"`
		Detail string `json:"detail"`
	}
	toolReq struct {
		OrgID int64 `json:"org_id"`
		// Channel travels apart: ToolRequest leaves it out of its JSON
		// (the webhook body does not carry it).
		Channel webhook.Channel     `json:"channel"`
		Request webhook.ToolRequest `json:"request"`
	}
	trunkReq struct {
		Number string `json:"number"`
	}
	trunkRes struct {
		Trunk calllog.InboundTrunk `json:"trunk"`
		Found bool                 `json:"found"`
	}
	credentialReq struct {
		Credential string `json:"credential"`
	}
	orgRes struct {
		OrgID int64 `json:"org_id"`
	}
	mcpReq struct {
		OrgID int64 `json:"org_id"`
	}
	knowledgeReq struct {
		OrgID int64    `json:"org_id"`
		Bases []string `json:"bases"`
		Docs  []string `json:"docs"`
		Query string   `json:"query"`
		Limit int      `json:"limit"`
	}
	// admission is control.Admission on the wire.
	admission = control.Admission
)

// wireError is every error's body: Code names a refusal the other side
// turns back into the same error; Fields and Status carry an *api.Error.
type wireError struct {
	Code   string              `json:"code"`
	Detail string              `json:"detail"`
	Status int                 `json:"status,omitempty"`
	Fields map[string][]string `json:"fields,omitempty"`
}

// Codes of the refusals that cross the API, and the errors they stand
// for. The media side tells them apart with errors.Is, so each comes back
// as the very sentinel.
var refusals = []struct {
	code string
	err  error
}{
	{"unknown_number", calllog.ErrUnknownNumber},
	{"number_inactive", calllog.ErrNumberInactive},
	{"no_agent", calllog.ErrNoAgent},
	{"unknown_agent", calllog.ErrUnknownAgent},
	{"insufficient_balance", calllog.ErrInsufficientBalance},
	{"bad_event", calllog.ErrBadEvent},
	{"invalid_credential", realtime.ErrInvalidCredential},
	{"session_limit", realtime.ErrSessionLimit},
	{"webhook_exchange", webhook.ErrExchange},
	{"webhook_blocked", webhook.ErrBlockedAddress},
	{"mcp_unavailable", mcp.ErrUnavailable},
}

// Codes of the API's own errors.
const (
	codeAPI          = "api_error"
	codeInternal     = "internal"
	codeUnauthorized = "unauthorized"
	codeForbidden    = "forbidden"
	codeBadRequest   = "bad_request"
	codeNotFound     = "not_found"
)

// encodeErr is err as the API answers it: its status and body.
func encodeErr(err error) (int, wireError) {
	for _, r := range refusals {
		if errors.Is(err, r.err) {
			return http.StatusUnprocessableEntity, wireError{Code: r.code, Detail: err.Error()}
		}
	}
	var ae *api.Error
	if errors.As(err, &ae) {
		return http.StatusUnprocessableEntity, wireError{Code: codeAPI, Detail: ae.Detail, Status: ae.Status, Fields: ae.Fields}
	}
	return http.StatusInternalServerError, wireError{Code: codeInternal, Detail: err.Error()}
}

// remoteErr is a refusal as the client returns it: the control plane's
// message, and the sentinel errors.Is finds.
type remoteErr struct {
	sentinel error
	msg      string
}

func (e *remoteErr) Error() string { return e.msg }
func (e *remoteErr) Unwrap() error { return e.sentinel }

// ErrRemote is what an unclassified failure of the control plane wraps
// (its 500s): the call failed there, not on the way.
var ErrRemote = errors.New("cluster: control plane error")

// ErrAuth is what the client returns when the control plane refuses the
// cluster secret (401 or 403): a configuration error, never retried.
var ErrAuth = errors.New("cluster: internal API refused the cluster secret")

// decodeErr is the error a non-2xx answer stands for.
func decodeErr(status int, body []byte) error {
	var we wireError
	if json.Unmarshal(body, &we) != nil || we.Code == "" {
		return fmt.Errorf("%w: HTTP %d: %.200s", ErrRemote, status, body)
	}
	for _, r := range refusals {
		if r.code == we.Code {
			return &remoteErr{sentinel: r.err, msg: we.Detail}
		}
	}
	switch we.Code {
	case codeAPI:
		return &api.Error{Status: we.Status, Detail: we.Detail, Fields: we.Fields}
	case codeUnauthorized, codeForbidden:
		return fmt.Errorf("%w: %s", ErrAuth, we.Detail)
	}
	return fmt.Errorf("%w: %s", ErrRemote, we.Detail)
}
