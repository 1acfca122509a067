package monitoring

import (
	"slices"
	"strings"
)

// The products the heartbeat reports, in its order.
const (
	ProductAPI       = "api"
	ProductTelephony = "telephony"
	ProductBrowser   = "browser_calls"
	ProductRealtime  = "realtime"
	ProductWebhooks  = "webhooks"
	ProductBilling   = "billing"
)

// products are the reported products with their public labels.
var products = []struct{ name, label string }{
	{ProductAPI, "REST API"},
	{ProductTelephony, "Phone calls (SIP/RTP)"},
	{ProductBrowser, "Browser calls (WebRTC)"},
	{ProductRealtime, "Realtime API (WebSocket)"},
	{ProductWebhooks, "Webhooks"},
	{ProductBilling, "Billing"},
}

// mediaProducts are the products that need media nodes and the AI
// providers.
var mediaProducts = []string{ProductTelephony, ProductBrowser, ProductRealtime}

// label is a product's public name.
func label(product string) string {
	for _, p := range products {
		if p.name == product {
			return p.label
		}
	}
	return product
}

// isProduct says whether s names a reported product.
func isProduct(s string) bool {
	return slices.ContainsFunc(products, func(p struct{ name, label string }) bool { return p.name == s })
}

// aliases maps words of alert rule names, GlitchTip projects and Azure
// configuration items to products; a text's first word found here decides.
var aliases = map[string]string{
	"api": ProductAPI, "control": ProductAPI, "rest": ProductAPI,
	"telephony": ProductTelephony, "sip": ProductTelephony, "rtp": ProductTelephony, "pstn": ProductTelephony, "phone": ProductTelephony, "trunk": ProductTelephony,
	"browser": ProductBrowser, "webrtc": ProductBrowser, "widget": ProductBrowser, "turn": ProductBrowser, "ice": ProductBrowser,
	"browser_calls": ProductBrowser,
	"realtime":      ProductRealtime, "websocket": ProductRealtime,
	"webhook": ProductWebhooks, "webhooks": ProductWebhooks, "outbox": ProductWebhooks,
	"billing": ProductBilling, "stripe": ProductBilling, "payment": ProductBilling, "payments": ProductBilling, "ledger": ProductBilling,
}

// productOf is the product the first of texts with a known word names,
// else the API.
func productOf(texts ...string) string {
	for _, t := range texts {
		words := strings.FieldsFunc(strings.ToLower(t), func(r rune) bool {
			return (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_'
		})
		for _, w := range words {
			if p, ok := aliases[w]; ok {
				return p
			}
			// "browser_calls" and "sip_trunk" style names: try the parts.
			for part := range strings.SplitSeq(w, "_") {
				if p, ok := aliases[part]; ok {
					return p
				}
			}
		}
	}
	return ProductAPI
}
