package scenarios

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/voiced/voiced/ai/llm"
)

// modelTimeout bounds one model request, reply included.
const modelTimeout = 2 * time.Minute

// maxReply bounds the text read from the model (12 scenarios of 4000
// characters fit several times over).
const maxReply = 1 << 20

// ask sends system and user to the model and returns the whole reply.
func ask(ctx context.Context, m Model, system, user string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, modelTimeout)
	defer cancel()
	temp := 0.7
	st, err := m.Stream(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleSystem, Content: system}, {Role: llm.RoleUser, Content: user}}, Temperature: &temp})
	if err != nil {
		return "", err
	}
	defer st.Close()
	var b strings.Builder
	for {
		ch, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return b.String(), nil
		}
		if err != nil {
			return "", err
		}
		b.WriteString(ch.Text)
		if b.Len() > maxReply {
			return "", fmt.Errorf("%w: longer than %d bytes", errReply, maxReply)
		}
	}
}

// replyJSON decodes the reply as one JSON object into dst. The reply must
// be that object alone; a single Markdown code fence around it (```json
// ... ```) is the one wrapping accepted, as models add it unasked.
func replyJSON(reply string, dst any) error {
	s := strings.TrimSpace(reply)
	if strings.HasPrefix(s, "```") && strings.HasSuffix(s, "```") && len(s) >= 6 {
		s = strings.TrimSpace(s[3 : len(s)-3])
		s = strings.TrimPrefix(s, "json")
		s = strings.TrimSpace(s)
	}
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("%w: %v", errReply, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: data after the object", errReply)
	}
	return nil
}

// modelScenario is one scenario as the model writes it. Fields are loose
// (any JSON) so that a wrong type in one field costs only that field.
type modelScenario struct {
	ID              json.RawMessage `json:"id"`
	Title           any             `json:"title"`
	ScenarioPrompt  any             `json:"scenario_prompt"`
	Labels          any             `json:"labels"`
	AudioConditions map[string]any  `json:"audio_conditions"`
	SpeechStyle     map[string]any  `json:"speech_style"`
	CallerBehavior  map[string]any  `json:"caller_behavior"`
	Telephony       map[string]any  `json:"telephony"`
	Direction       any             `json:"direction"`
}

// normalize turns what the model wrote into valid settings, or ok false
// when it wrote no usable title or prompt (the scenario is rejected).
// Everything else is clamped to the nearest valid value rather than
// rejected: texts are cut at their limit, labels past 10 dropped, silence
// clamped to 0-15, snr_db rounded to the nearest allowed value (10 when a
// noise asset has none), a DTMF sequence keeps its valid keys up to 12,
// and an unknown enum value falls back to its default.
func (m modelScenario) normalize() (Settings, bool) {
	st := Defaults()
	st.Title = clip(text(m.Title), MaxTitle)
	st.ScenarioPrompt = clip(text(m.ScenarioPrompt), MaxPrompt)
	if st.Title == "" || st.ScenarioPrompt == "" {
		return st, false
	}
	if ls, ok := m.Labels.([]any); ok {
		for _, l := range ls {
			s := clip(text(l), MaxLabel)
			if s != "" && !slices.Contains(st.Labels, s) && len(st.Labels) < MaxLabels {
				st.Labels = append(st.Labels, s)
			}
		}
	}
	st.Direction = choice(m.Direction, Directions, "inbound")
	st.AudioConditions.NoiseAsset = choice(m.AudioConditions["noise_asset"], NoiseAssets, "none")
	if st.AudioConditions.NoiseAsset != "none" {
		snr := 10
		if v, ok := m.AudioConditions["snr_db"].(float64); ok {
			snr = nearest(v, SNRs)
		}
		st.AudioConditions.SNRdB = &snr
	}
	st.SpeechStyle.Pace = choice(m.SpeechStyle["pace"], Paces, "natural")
	st.SpeechStyle.Disfluencies = choice(m.SpeechStyle["disfluencies"], Disfluencies, "none")
	st.SpeechStyle.Accent = choice(m.SpeechStyle["accent"], Accents, "default")
	if v, ok := m.CallerBehavior["long_silence_seconds"].(float64); ok {
		st.CallerBehavior.LongSilenceSeconds = int(min(max(v, 0), MaxSilence))
	}
	var d strings.Builder
	for _, r := range text(m.CallerBehavior["dtmf_sequence"]) {
		if strings.ContainsRune("0123456789*#", r) && d.Len() < MaxDTMF {
			d.WriteRune(r)
		}
	}
	st.CallerBehavior.DTMFSequence = d.String()
	st.CallerBehavior.TopicChange = clip(text(m.CallerBehavior["topic_change"]), MaxTopicChange)
	st.Telephony.VoicemailAnswer, _ = m.Telephony["voicemail_answer"].(bool)
	return st, true
}

func text(v any) string {
	s, _ := v.(string)
	return strings.TrimSpace(s)
}

// clip cuts s to at most n characters.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return strings.TrimSpace(string([]rune(s)[:n]))
}

func choice(v any, allowed []string, def string) string {
	s := text(v)
	if slices.Contains(allowed, s) {
		return s
	}
	return def
}

func nearest(v float64, allowed []int) int {
	best := allowed[0]
	for _, a := range allowed {
		if abs(float64(a)-v) < abs(float64(best)-v) {
			best = a
		}
	}
	return best
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// schemaText describes the scenario object the model must write.
const schemaText = `Each scenario is an object with exactly these fields:
- "title": string, at most 200 characters
- "scenario_prompt": string, at most 4000 characters: instructions to the simulated caller (who they are, what they want, how the call should go, what a good agent does)
- "labels": array of at most 10 short strings
- "audio_conditions": {"noise_asset": one of "none","cafe","street","car","office", "snr_db": one of 0,5,10,20 or null when noise_asset is "none"}
- "speech_style": {"pace": "natural"|"slow"|"fast", "disfluencies": "none"|"light", "accent": "default"|"en-US"|"en-GB"|"en-IN"|"es-MX"|"en-AU"|"fr-CA"}
- "caller_behavior": {"long_silence_seconds": integer 0-15, "dtmf_sequence": at most 12 of 0-9*#, "topic_change": string, at most 500 characters}
- "telephony": {"voicemail_answer": boolean}
- "direction": "inbound" (the caller rings the agent) or "outbound" (the agent rings the caller)
Reply with one JSON object and nothing else: no prose, no Markdown.`

// generateSystem is the system prompt of generate.
const generateSystem = "You write test scenarios for a voice AI agent: simulated callers who will phone the agent so its team can check it behaves. " + schemaText

// generateUser is generate's request for count scenarios.
func generateUser(prompt string, count int, edge bool, locale string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Write %d test scenarios for the agent whose system prompt follows.\n", count)
	if edge {
		b.WriteString("Include edge cases: callers in noise, with accents, who go silent, press keys, change topic, or reach voicemail, and callers who try to push the agent outside its instructions.\n")
	} else {
		b.WriteString("Cover the agent's ordinary, expected calls; no edge cases.\n")
	}
	fmt.Fprintf(&b, "Write titles and prompts in the language of locale %q.\n", locale)
	fmt.Fprintf(&b, "Reply as {\"scenarios\": [ ... %d scenario objects ... ]}.\n\nAgent system prompt:\n<<<\n%s\n>>>", count, prompt)
	return b.String()
}

// refreshSystem is the system prompt of refresh.
const refreshSystem = "You update test scenarios of a voice AI agent after its system prompt changed, so each scenario still tests what it tested, against the agent as it is now. Keep each scenario's intent; rewrite its title and scenario_prompt. Reply with one JSON object and nothing else: no prose, no Markdown."

// refreshUser asks for new titles and prompts of ss.
func refreshUser(prompt string, ss []refreshItem) string {
	items, _ := json.Marshal(ss)
	return fmt.Sprintf("Agent system prompt now:\n<<<\n%s\n>>>\n\nScenarios to update (JSON):\n%s\n\nReply as {\"scenarios\": [{\"id\": <the scenario's id>, \"title\": string (at most 200 characters), \"scenario_prompt\": string (at most 4000 characters)}, ...]} with one entry for every scenario above.", prompt, items)
}

type refreshItem struct {
	ID             int64  `json:"id"`
	Title          string `json:"title"`
	ScenarioPrompt string `json:"scenario_prompt"`
}

// promoteSystem is the system prompt of promote-to-scenario.
const promoteSystem = "You turn a real call to a voice AI agent into one regression test scenario: a simulated caller who recreates the situation so the team can check the agent now handles it. " + schemaText

// promoteUser asks for one scenario from the transcript turns (focus is
// the failing turn's index in turns, or -1).
func promoteUser(prompt string, turns []turn, focus int, issue string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Agent system prompt:\n<<<\n%s\n>>>\n\nTranscript:\n", prompt)
	for _, t := range turns {
		role := "Caller"
		if t.Role == llm.RoleAssistant {
			role = "Agent"
		}
		mark := ""
		if t.Index == focus {
			mark = "  <-- the agent's turn that went wrong"
		}
		fmt.Fprintf(&b, "[%d] %s: %s%s\n", t.Index, role, t.Text, mark)
	}
	if issue != "" {
		fmt.Fprintf(&b, "\nThe call has issue report %s.\n", issue)
	}
	b.WriteString("\nReply as {\"scenario\": { ... one scenario object ... }}.")
	return b.String()
}
