// Package browser is the control plane's side of browser calls: the
// widget's calls (it implements widget.Calls) and mic sessions (POST
// /v1/mic-session and its connect route). It admits the call through the
// call log, hands it with the browser's SDP offer to the WebRTC side
// (Media, which package call implements) and answers with its SDP answer
// and the node's ICE servers. It is generic over the agent configuration
// C, as control/calllog is.
package browser
