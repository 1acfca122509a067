package calllog

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/voiced/voiced/storage"
)

// Product is an agent product tier and its price. Calls are billed
// per billable minute (see BillableMinutes) at CentsPerMinute, rounded up
// to the next whole cent.
type Product struct {
	Name           string
	CentsPerMinute int64
}

// DefaultProducts returns the tiers offered when none are configured.
func DefaultProducts() []Product {
	return []Product{{"storm-mini", 5}, {"storm-base", 9}, {"storm-pro", 15}}
}

var productName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// Validate checks the name and the price.
func (p Product) Validate() error {
	if !productName.MatchString(p.Name) {
		return errors.New("name must be 1-64 lowercase letters, digits, '.', '_' or '-'")
	}
	if p.CentsPerMinute < 0 {
		return errors.New("price must be >= 0 cents per minute")
	}
	return nil
}

// ParseProducts parses "name=cents,name=cents" (cents per minute), the
// form of the --products flag.
func ParseProducts(s string) ([]Product, error) {
	var out []Product
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, price, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want name=cents_per_minute, like storm-base=9", part)
		}
		c, err := strconv.ParseInt(strings.TrimSpace(price), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q: price must be a whole number of cents per minute", part)
		}
		p := Product{Name: strings.TrimSpace(name), CentsPerMinute: c}
		if err := p.Validate(); err != nil {
			return nil, fmt.Errorf("%q: %v", part, err)
		}
		if seen[p.Name] {
			return nil, fmt.Errorf("%q is listed twice", p.Name)
		}
		seen[p.Name] = true
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, errors.New("list at least one product, like storm-base=9")
	}
	return out, nil
}

// BillableMinutes rounds a call's duration to the nearest quarter minute
// (15-second steps), with a minimum of 0.25 (spec sections 2.9 and 8).
// A call of zero length bills nothing.
func BillableMinutes(d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	q := math.Round(d.Seconds() / 15)
	return math.Max(q, 1) / 4
}

// PriceCents is what minutes cost at p: rounded up to the next whole cent,
// so a call never costs less than its exact price.
func (p Product) PriceCents(minutes float64) int64 {
	// Quarter minutes times an integer price are exact in float64; the
	// ceiling therefore never rounds an exact cent up.
	return int64(math.Ceil(minutes * float64(p.CentsPerMinute)))
}

// NoLimit is the MaxDuration of a call whose product costs nothing.
const NoLimit = time.Duration(math.MaxInt64)

// EndReasonVoicemail is the end_reason of a call that went straight to
// voicemail; it bills a flat VoicemailCents (spec sections 2.9 and 8).
const EndReasonVoicemail = "voicemail"

// VoicemailCents is the flat price of a straight-to-voicemail call.
const VoicemailCents = 1

// CallCost is what a call of duration d costs at product p: its billable
// minutes (d to the nearest quarter minute, at least 0.25; see
// BillableMinutes) times the per-minute price, rounded up to a whole cent
// (Product.PriceCents). A straight-to-voicemail call costs a flat cent
// whatever its length.
func CallCost(d time.Duration, p Product, voicemail bool) storage.CallCharge {
	m := BillableMinutes(d)
	if voicemail {
		return storage.CallCharge{BillableMinutes: m, TotalCents: VoicemailCents}
	}
	return storage.CallCharge{BillableMinutes: m, TotalCents: p.PriceCents(m)}
}

// MaxCallDuration is the longest call balance pays for at p, measured the
// way calls are billed: durations are whole seconds, and s seconds bill
// round(s/15) quarter minutes, so q affordable quarters allow up to
// 15q+7 seconds. Zero means not even the 0.25-minute minimum is covered;
// a free product has NoLimit.
func MaxCallDuration(balanceCents int64, p Product) time.Duration {
	if p.CentsPerMinute <= 0 {
		return NoLimit
	}
	if balanceCents <= 0 {
		return 0
	}
	// ceil(q*price/4) <= balance  <=>  q*price <= 4*balance.
	q := 4 * balanceCents / p.CentsPerMinute
	if q == 0 {
		return 0
	}
	return time.Duration(15*q+7) * time.Second
}
