package numbers

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// DID is one demo number of the operator's pool: an E.164 number routed
// to this service, with the area code, city and state clients filter on.
type DID struct {
	Number   string
	AreaCode string
	City     string
	State    string
}

var (
	e164Re     = regexp.MustCompile(`^\+[1-9][0-9]{1,14}$`)
	areaCodeRe = regexp.MustCompile(`^[0-9]{3}$`)
	stateRe    = regexp.MustCompile(`^[A-Za-z]{2}$`)
)

// ValidE164 reports whether s is an E.164 number: "+", a non-zero digit,
// then at most 14 more digits.
func ValidE164(s string) bool { return e164Re.MatchString(s) }

// ParseDIDPool reads a pool file: one DID per line as CSV
// "number[,area_code[,city[,state]]]". Blank lines and lines starting
// with "#" are skipped, as is a header line starting with "number". For
// North American numbers (+1 and ten digits) the area code defaults to
// the three digits after +1.
func ParseDIDPool(r io.Reader) ([]DID, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.Comment = '#'
	cr.TrimLeadingSpace = true
	var out []DID
	seen := map[string]bool{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("did pool: %w", err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) == 0 || (len(rec) == 1 && strings.TrimSpace(rec[0]) == "") {
			continue
		}
		if strings.EqualFold(strings.TrimSpace(rec[0]), "number") {
			continue
		}
		if len(rec) > 4 {
			return nil, fmt.Errorf("did pool line %d: want number[,area_code[,city[,state]]]", line)
		}
		for len(rec) < 4 {
			rec = append(rec, "")
		}
		d := DID{Number: strings.TrimSpace(rec[0]), AreaCode: strings.TrimSpace(rec[1]), City: strings.TrimSpace(rec[2]), State: strings.ToUpper(strings.TrimSpace(rec[3]))}
		if err := d.normalize(); err != nil {
			return nil, fmt.Errorf("did pool line %d: %v", line, err)
		}
		if seen[d.Number] {
			return nil, fmt.Errorf("did pool line %d: %s is listed twice", line, d.Number)
		}
		seen[d.Number] = true
		out = append(out, d)
	}
	return out, nil
}

func (d *DID) normalize() error {
	if !ValidE164(d.Number) {
		return fmt.Errorf("%q is not an E.164 number like +14155550100", d.Number)
	}
	if d.AreaCode == "" && strings.HasPrefix(d.Number, "+1") && len(d.Number) == 12 {
		d.AreaCode = d.Number[2:5]
	}
	if d.AreaCode != "" && !areaCodeRe.MatchString(d.AreaCode) {
		return fmt.Errorf("area code %q must be 3 digits", d.AreaCode)
	}
	d.State = strings.ToUpper(d.State)
	if d.State != "" && !stateRe.MatchString(d.State) {
		return fmt.Errorf("state %q must be 2 letters", d.State)
	}
	return nil
}

// didPool is the configured pool, in the operator's order.
type didPool struct {
	dids  []DID
	index map[string]DID
}

func newDIDPool(dids []DID) (*didPool, error) {
	p := &didPool{index: map[string]DID{}}
	for _, d := range dids {
		if err := d.normalize(); err != nil {
			return nil, fmt.Errorf("control: did pool: %w", err)
		}
		if _, dup := p.index[d.Number]; dup {
			return nil, fmt.Errorf("control: did pool: %s is listed twice", d.Number)
		}
		p.index[d.Number] = d
		p.dids = append(p.dids, d)
	}
	return p, nil
}

// poolFilter selects DIDs; empty fields match anything. City compares
// case-insensitively.
type poolFilter struct{ AreaCode, City, State string }

func (f poolFilter) empty() bool { return f == poolFilter{} }

func (f poolFilter) match(d DID) bool {
	return (f.AreaCode == "" || d.AreaCode == f.AreaCode) &&
		(f.City == "" || strings.EqualFold(d.City, f.City)) &&
		(f.State == "" || d.State == f.State)
}

// matching returns the DIDs f selects, in pool order.
func (p *didPool) matching(f poolFilter) []DID {
	var out []DID
	for _, d := range p.dids {
		if f.match(d) {
			out = append(out, d)
		}
	}
	return out
}

// describe says in words what f asks for, for error details.
func (f poolFilter) describe() string {
	var parts []string
	if f.AreaCode != "" {
		parts = append(parts, "area code "+f.AreaCode)
	}
	if f.City != "" {
		parts = append(parts, "city "+f.City)
	}
	if f.State != "" {
		parts = append(parts, "state "+f.State)
	}
	return strings.Join(parts, ", ")
}
