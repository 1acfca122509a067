package cluster

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"

	"github.com/voiced/voiced/storage/coord"
)

// RealtimeProxy is the realtime socket of a control replica (GET
// /v1/realtime, mounted with realtime.Sessions.Mount): it passes the
// WebSocket to a media node the placement picks, credential and query
// as they came, so a client that knows only the API's base URL (the
// openai and @openai/agents-realtime npm clients) is served by a node.
// No live node: 503. Nodes are reached over https when the control
// plane's publicURL is https.
func RealtimeProxy(p coord.Placer, publicURL string, log *slog.Logger) http.Handler {
	scheme := httpScheme(publicURL)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := p.Pick(r.Context())
		if err != nil {
			if !errors.Is(err, coord.ErrNoNodes) {
				log.Warn("realtime socket not placed", "err", err)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"detail":"No media node can take the session now; try again shortly."}`))
			return
		}
		target := &url.URL{Scheme: scheme, Host: n.Addr}
		rp := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(target)
				pr.SetXForwarded()
			},
			ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
				log.Warn("realtime socket: media node unreachable", "node_id", n.ID, "addr", n.Addr, "err", err)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadGateway)
				_, _ = w.Write([]byte(`{"detail":"The media node for the session did not answer; try again."}`))
			},
		}
		rp.ServeHTTP(w, r)
	})
}
