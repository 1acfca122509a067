package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

var (
	toolNameRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	uuidRe     = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
)

// Allowed values of the enumerated config fields.
var (
	backgroundTracks = []string{"office", "cafe", "call_center"}
	thinkingLevels   = []string{"none", "low", "medium", "high"}
	ackModes         = []string{"off", "auto", "custom"}
	speakOrders      = []string{"agent_first", "user_first"}
	noiseReductions  = []string{"near_field", "far_field", "off"}
	voicemailActions = []string{"hangup", "leave_message", "continue"}
)

func asTypeErr(err error, te **json.UnmarshalTypeError) bool { return errors.As(err, te) }

func oneOf(v string, allowed []string) string { return api.OneOf(v, allowed) }

func tooLong(s string, max int) string { return api.TooLong(s, max) }

// validateConfig checks c and normalizes it in place (language tags,
// list de-duplication, tool defaults). Messages go to f under prefix plus
// the field name ("draft_" for staged fields).
func (r *resources) validateConfig(c *AgentConfig, f fields, prefix string) {
	add := func(field, msg string) {
		if msg != "" {
			f.add(prefix+field, msg)
		}
	}
	add("prompt", tooLong(c.Prompt, 32000))
	switch {
	case strings.HasPrefix(c.Voice, "custom:"):
		add("voice", "Custom voice "+c.Voice+" was not found or is not ready.")
	case !r.catalog.Has(c.Voice):
		add("voice", `"`+c.Voice+`" is not in the voice catalog; see GET /v1/voices.`)
	}
	if _, ok := r.products[c.Product]; !ok {
		names := make([]string, 0, len(r.cfg.Products))
		for _, p := range r.cfg.Products {
			names = append(names, p.Name)
		}
		add("product", oneOf(c.Product, names))
	}
	if tag, ok := normalizeLang(c.PrimaryLanguage); ok {
		c.PrimaryLanguage = tag
	} else {
		add("primary_language", `"`+c.PrimaryLanguage+`" is not a BCP-47 language tag such as en-US.`)
	}
	var langs []string
	for _, l := range c.AdditionalLanguages {
		tag, ok := normalizeLang(l)
		if !ok {
			add("additional_languages", `"`+l+`" is not a BCP-47 language tag such as es-MX.`)
			continue
		}
		if tag != c.PrimaryLanguage && !slices.Contains(langs, tag) {
			langs = append(langs, tag)
		}
	}
	c.AdditionalLanguages = nonNil(langs)
	if len(c.AdditionalLanguages) > 10 {
		add("additional_languages", "Ensure this list has no more than 10 languages.")
	}
	if c.BackgroundTrack != nil {
		add("background_track", oneOf(*c.BackgroundTrack, backgroundTracks))
	}
	add("thinking_level", oneOf(c.ThinkingLevel, thinkingLevels))
	add("acknowledgement_prompt_mode", oneOf(c.AcknowledgementPromptMode, ackModes))
	if c.AcknowledgementPrompt != nil {
		add("acknowledgement_prompt", tooLong(*c.AcknowledgementPrompt, 500))
	}
	if c.AcknowledgementPromptMode == "custom" && (c.AcknowledgementPrompt == nil || strings.TrimSpace(*c.AcknowledgementPrompt) == "") {
		add("acknowledgement_prompt", "This field is required when acknowledgement_prompt_mode is custom.")
	}
	add("inbound_speak_order", oneOf(c.InboundSpeakOrder, speakOrders))
	add("outbound_speak_order", oneOf(c.OutboundSpeakOrder, speakOrders))
	if c.FirstMessage != nil {
		add("first_message", tooLong(*c.FirstMessage, 1000))
	}
	if c.SilenceIntervalSeconds != 0 && (c.SilenceIntervalSeconds < 3 || c.SilenceIntervalSeconds > 120) {
		add("silence_interval_seconds", "Must be 0 (no check-ins) or from 3 to 120.")
	}
	if c.SilenceMaxCheckins < 0 || c.SilenceMaxCheckins > 10 {
		add("silence_max_checkins", "Must be from 0 to 10.")
	}
	if c.MaxCallDurationSeconds < 30 || c.MaxCallDurationSeconds > 14400 {
		add("max_call_duration_seconds", "Must be from 30 to 14400 seconds.")
	}
	r.validateTools(c, add)
	c.KnowledgeBaseIDs = validateIDs(c.KnowledgeBaseIDs, "knowledge_base_ids", add)
	c.KnowledgeDocumentIDs = validateIDs(c.KnowledgeDocumentIDs, "knowledge_document_ids", add)
	c.MCPServerIDs = validateIDs(c.MCPServerIDs, "mcp_server_ids", add)
	if c.MCPToolSearchThreshold < 1 || c.MCPToolSearchThreshold > 1000 {
		add("mcp_tool_search_threshold", "Must be from 1 to 1000 tools.")
	}
	if len(c.Placeholders) > 20 {
		add("placeholders", "Ensure this list has no more than 20 phrases.")
	}
	for _, p := range c.Placeholders {
		if n := utf8.RuneCountInString(strings.TrimSpace(p)); n == 0 || n > 200 {
			add("placeholders", "Each phrase must be 1 to 200 characters.")
			break
		}
	}
	add("telephony", prefixMsg("noise_reduction", oneOf(c.Telephony.NoiseReduction, noiseReductions)))
	if c.Telephony.EndpointingMS < 100 || c.Telephony.EndpointingMS > 3000 {
		add("telephony", "endpointing_ms: Must be from 100 to 3000.")
	}
	add("voicemail", prefixMsg("action", oneOf(c.Voicemail.Action, voicemailActions)))
	if c.Voicemail.Action == "leave_message" && strings.TrimSpace(c.Voicemail.Message) == "" {
		add("voicemail", "message: This field is required when action is leave_message.")
	}
	add("voicemail", prefixMsg("message", tooLong(c.Voicemail.Message, 1000)))
	validateTransfers(c.TransferDestinations, add)
	var events []string
	for _, e := range c.CallEvents {
		if msg := oneOf(e, callEventTypes); msg != "" {
			add("call_events", msg)
		} else if !slices.Contains(events, e) {
			events = append(events, e)
		}
	}
	c.CallEvents = nonNil(events)
}

func (r *resources) validateTools(c *AgentConfig, add func(field, msg string)) {
	if len(c.Tools) > 64 {
		add("tools", "Ensure this list has no more than 64 tools.")
	}
	seen := map[string]bool{}
	for i := range c.Tools {
		t := &c.Tools[i]
		at := fmt.Sprintf("tools[%d] ", i)
		if t.Type == "" {
			t.Type = "function"
		}
		if t.Type != "function" {
			add("tools", at+`type: only "function" tools are supported.`)
		}
		switch {
		case !toolNameRe.MatchString(t.Name):
			add("tools", at+"name: 1-64 letters, digits, '_' or '-'.")
		case seen[t.Name]:
			add("tools", at+"name: "+t.Name+" is defined twice.")
		}
		seen[t.Name] = true
		if m := tooLong(t.Description, 1024); m != "" {
			add("tools", at+"description: "+m)
		}
		if len(t.Parameters) == 0 || string(t.Parameters) == "null" {
			t.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
			continue
		}
		var schema map[string]any
		if err := json.Unmarshal(t.Parameters, &schema); err != nil {
			add("tools", at+"parameters: must be a JSON Schema object.")
			continue
		}
		if typ, ok := schema["type"]; ok && typ != "object" {
			add("tools", at+`parameters: the schema's type must be "object".`)
		}
		var buf bytes.Buffer
		if json.Compact(&buf, t.Parameters) == nil {
			t.Parameters = buf.Bytes()
		}
	}
}

func validateIDs(ids []string, field string, add func(field, msg string)) []string {
	var out []string
	for _, id := range ids {
		id = strings.ToLower(strings.TrimSpace(id))
		if !uuidRe.MatchString(id) {
			add(field, `"`+id+`" is not a UUID.`)
			continue
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	if len(out) > 50 {
		add(field, "Ensure this list has no more than 50 ids.")
	}
	return nonNil(out)
}

// refStores find what an agent's ids name in its organization.
type refStores struct {
	// mcp lists the org's MCP servers (mcp_server_ids).
	mcp interface {
		MCPServers(ctx context.Context, orgID int64) ([]storage.MCPServer, error)
	}
	// knowledge finds the org's knowledge bases and documents
	// (knowledge_base_ids, knowledge_document_ids).
	knowledge interface {
		Base(ctx context.Context, orgID int64, id string) (storage.KnowledgeBase, error)
		Document(ctx context.Context, orgID int64, id string) (storage.KnowledgeDocument, error)
	}
}

// added lists the ids of now that were not in before.
func added(now, before []string) []string {
	var out []string
	for _, id := range now {
		if !slices.Contains(before, id) {
			out = append(out, id)
		}
	}
	return out
}

// checkRefs checks that the MCP servers, knowledge bases and knowledge
// documents c lists and prev did not are orgID's: an unknown id, or
// another org's, is a field error naming it. Ids kept from prev are not
// checked again, so a base deleted since does not block other changes.
func checkRefs(ctx context.Context, st refStores, orgID int64, c, prev *AgentConfig, f fields, prefix string) error {
	if prev == nil {
		prev = &AgentConfig{}
	}
	if ids := added(c.MCPServerIDs, prev.MCPServerIDs); len(ids) > 0 {
		servers, err := st.mcp.MCPServers(ctx, orgID)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if !slices.ContainsFunc(servers, func(m storage.MCPServer) bool { return strings.EqualFold(m.ID, id) }) {
				f.add(prefix+"mcp_server_ids", `MCP server "`+id+`" was not found; see GET /v1/mcp-servers.`)
			}
		}
	}
	for _, k := range []struct {
		field, what string
		ids         []string
		find        func(id string) error
	}{
		{"knowledge_base_ids", "knowledge base", added(c.KnowledgeBaseIDs, prev.KnowledgeBaseIDs),
			func(id string) error { _, err := st.knowledge.Base(ctx, orgID, id); return err }},
		{"knowledge_document_ids", "knowledge document", added(c.KnowledgeDocumentIDs, prev.KnowledgeDocumentIDs),
			func(id string) error { _, err := st.knowledge.Document(ctx, orgID, id); return err }},
	} {
		for _, id := range k.ids {
			err := k.find(id)
			if errors.Is(err, storage.ErrNotFound) {
				f.add(prefix+k.field, `"`+id+`" is not a `+k.what+` of this organization.`)
				continue
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func validateTransfers(ds []TransferDestination, add func(field, msg string)) {
	if len(ds) > 20 {
		add("transfer_destinations", "Ensure this list has no more than 20 destinations.")
	}
	seen := map[string]bool{}
	for i, d := range ds {
		at := fmt.Sprintf("transfer_destinations[%d] ", i)
		if n := utf8.RuneCountInString(strings.TrimSpace(d.Name)); n == 0 || n > 100 {
			add("transfer_destinations", at+"name: must be 1 to 100 characters.")
		} else if seen[d.Name] {
			add("transfer_destinations", at+"name: "+d.Name+" is listed twice.")
		}
		seen[d.Name] = true
		if !validE164(d.Number) {
			add("transfer_destinations", at+"number: must be an E.164 number like +14155550100.")
		}
		if m := tooLong(d.Description, 500); m != "" {
			add("transfer_destinations", at+"description: "+m)
		}
	}
}

func prefixMsg(field, msg string) string {
	if msg == "" {
		return ""
	}
	return field + ": " + msg
}

func nonNil[T any](s []T) []T { return api.NonNil(s) }
