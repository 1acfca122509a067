package monitoring

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// Stored text limits: longer monitor text is cut, not refused.
const (
	maxRule        = 256
	maxDescription = 1024
)

// cut shortens s to max characters.
func cut(s string, max int) string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	return string([]rune(s)[:max])
}

// azureSchemaID is the common alert schema's id.
const azureSchemaID = "azureMonitorCommonAlertSchema"

// azureSeverities maps Azure's Sev0..Sev4 to the stored severity.
var azureSeverities = map[string]string{"Sev0": "critical", "Sev1": "error", "Sev2": "warning", "Sev3": "info", "Sev4": "verbose"}

// azureAlert is the part of Azure Monitor's common alert schema read here.
type azureAlert struct {
	SchemaID *string `json:"schemaId"`
	Data     *struct {
		Essentials *struct {
			AlertID            string   `json:"alertId"`
			AlertRule          *string  `json:"alertRule"`
			Severity           *string  `json:"severity"`
			MonitorCondition   *string  `json:"monitorCondition"`
			FiredDateTime      string   `json:"firedDateTime"`
			ResolvedDateTime   string   `json:"resolvedDateTime"`
			Description        string   `json:"description"`
			ConfigurationItems []string `json:"configurationItems"`
		} `json:"essentials"`
		CustomProperties map[string]any `json:"customProperties"`
	} `json:"data"`
}

// when parses an Azure timestamp; empty means now.
func (m *Monitor) when(f api.Fields, field, v string) time.Time {
	if v == "" {
		return m.cfg.Now()
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		f.Add(field, "Must be an ISO 8601 date-time.")
	}
	return t
}

func (m *Monitor) azureAlert(c fiber.Ctx, _ *storage.Principal) error {
	if err := m.checkToken(c); err != nil {
		return err
	}
	var in azureAlert
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	f := api.Fields{}
	switch {
	case in.SchemaID == nil:
		f.Add("schemaId", "This field is required.")
	case *in.SchemaID != azureSchemaID:
		f.Add("schemaId", "Must be "+azureSchemaID+".")
	}
	if in.Data == nil || in.Data.Essentials == nil {
		f.Add("data.essentials", "This field is required.")
		return f.Err()
	}
	e := in.Data.Essentials
	rule := ""
	if e.AlertRule == nil || strings.TrimSpace(*e.AlertRule) == "" {
		f.Add("data.essentials.alertRule", "This field is required.")
	} else {
		rule = cut(*e.AlertRule, maxRule)
	}
	severity := ""
	if e.Severity == nil {
		f.Add("data.essentials.severity", "This field is required.")
	} else if severity = azureSeverities[*e.Severity]; severity == "" {
		f.Add("data.essentials.severity", api.OneOf(*e.Severity, []string{"Sev0", "Sev1", "Sev2", "Sev3", "Sev4"}))
	}
	condition := ""
	if e.MonitorCondition == nil {
		f.Add("data.essentials.monitorCondition", "This field is required.")
	} else if condition = *e.MonitorCondition; condition != "Fired" && condition != "Resolved" {
		f.Add("data.essentials.monitorCondition", api.OneOf(condition, []string{"Fired", "Resolved"}))
	}
	fired := m.when(f, "data.essentials.firedDateTime", e.FiredDateTime)
	resolved := time.Time{}
	if condition == "Resolved" {
		resolved = m.when(f, "data.essentials.resolvedDateTime", e.ResolvedDateTime)
	}
	if err := f.Err(); err != nil {
		return err
	}
	if condition == "Resolved" {
		rs, err := m.resolve(c.Context(), "azure", rule, resolved)
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{"incidents": rs})
	}
	product := ""
	if p, ok := in.Data.CustomProperties["product"].(string); ok && isProduct(p) {
		product = p
	} else {
		product = productOf(append([]string{rule}, e.ConfigurationItems...)...)
	}
	r, err := m.fire(c.Context(), storage.Alert{Source: "azure", Key: rule, Rule: rule, Product: product, Severity: severity,
		Title: rule, Description: cut(e.Description, maxDescription), At: fired})
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"incidents": []receipt{r}})
}

// glitchtipAlert is GlitchTip's alert webhook: Slack's incoming-webhook
// shape, one attachment per issue.
type glitchtipAlert struct {
	Alias       string `json:"alias"`
	Text        string `json:"text"`
	Attachments *[]struct {
		Title     *string `json:"title"`
		TitleLink string  `json:"title_link"`
		Text      string  `json:"text"`
		Fields    []struct {
			Title string `json:"title"`
			Value string `json:"value"`
		} `json:"fields"`
	} `json:"attachments"`
}

func (m *Monitor) glitchtipAlert(c fiber.Ctx, _ *storage.Principal) error {
	if err := m.checkToken(c); err != nil {
		return err
	}
	var in glitchtipAlert
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	if in.Attachments == nil || len(*in.Attachments) == 0 {
		return api.FieldErr("attachments", "Give at least one attachment (one per issue).")
	}
	if len(*in.Attachments) > 50 {
		return api.FieldErr("attachments", "Ensure this field has no more than 50 elements.")
	}
	var alerts []storage.Alert
	for _, a := range *in.Attachments {
		if a.Title == nil || strings.TrimSpace(*a.Title) == "" {
			return api.FieldErr("attachments.title", "Every attachment needs a title (the issue's).")
		}
		title := cut(*a.Title, maxRule)
		key := cut(a.TitleLink, maxDescription)
		if key == "" {
			key = title
		}
		var project string
		for _, fl := range a.Fields {
			if strings.EqualFold(fl.Title, "project") {
				project = fl.Value
			}
		}
		alerts = append(alerts, storage.Alert{Source: "glitchtip", Key: key, Rule: title, Product: productOf(project, title),
			Severity: "info", Title: title, Description: cut(a.Text, maxDescription), At: m.cfg.Now()})
	}
	out := make([]receipt, 0, len(alerts))
	for _, a := range alerts {
		r, err := m.fire(c.Context(), a)
		if err != nil {
			return err
		}
		out = append(out, r)
	}
	return c.JSON(fiber.Map{"incidents": out})
}
