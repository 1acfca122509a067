package control

import (
	"net/http"

	"github.com/voiced/voiced/control/browser"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/knowledge"
	"github.com/voiced/voiced/control/realtime"
)

// The call log's types over this control plane's AgentConfig: what the
// live call (package call) and the front doors trade with control. The
// rest of the call's record types (CallEvent, CallEnd, ToolRun, the
// refusals) are control/calllog's own.
type (
	// CallLog admits calls and keeps their record (calllog.Log).
	CallLog = calllog.Log[AgentConfig]
	// Admission is an admitted call with its agent configuration.
	Admission = calllog.Admission[AgentConfig]
	// OutboundCall is a recorded call the dialer places.
	OutboundCall = calllog.OutboundCall[AgentConfig]
	// Dialer places outbound calls (WithDialer).
	Dialer = calllog.Dialer[AgentConfig]
	// BrowserMedia is the WebRTC side of browser calls (WithBrowserMedia).
	BrowserMedia = browser.Media[AgentConfig]
	// BrowserCall is an admitted browser call as the media side needs it.
	BrowserCall = browser.Call[AgentConfig]
	// Realtime serves realtime sessions and redeems their credentials.
	Realtime = realtime.Sessions[AgentConfig]
	// RealtimeGrant is what a realtime session token grants.
	RealtimeGrant = realtime.Grant[AgentConfig]
	// Product is an agent product tier and its price.
	Product = calllog.Product
)

// Realtime returns the server's realtime sessions.
func (s *Server) Realtime() *Realtime { return s.rt }

// MountListen serves GET /v1/calls/{call_id}/listen with h, the node's
// listen socket (serve: the node runs in this process). Unmounted, the
// route answers 503.
func (s *Server) MountListen(h http.Handler) { s.res.listen.Mount(h) }

// CallLog returns the server's call log.
func (s *Server) CallLog() *CallLog { return s.calls }

// CallKnowledge is the knowledge search of live calls (call.Knowledge).
func (s *Server) CallKnowledge() knowledge.CallSearch { return knowledge.NewCallSearch(s.knowledge) }
