package sip

import "strings"

// Number returns the phone number in the user part of a SIP or tel URI
// normalized toward E.164, the form numbers are stored in: URI
// parameters (";phone-context=...", ";npdi") and visual separators
// ("-", ".", "(", ")", spaces) are removed; "+digits" is kept; "00" then
// digits becomes "+digits" (the international prefix); 11 to 15 bare
// digits get a "+" (carriers often drop it, and 11 digits cannot be a
// national number in the North American plan). Anything else (shorter
// numbers, names such as "alice") is returned as cleaned, and will
// simply not match a number.
func Number(user string) string {
	if i := strings.IndexByte(user, ';'); i >= 0 {
		user = user[:i]
	}
	var b strings.Builder
	for i := 0; i < len(user); i++ {
		switch c := user[i]; c {
		case '-', '.', '(', ')', ' ':
		default:
			b.WriteByte(c)
		}
	}
	n := b.String()
	switch {
	case len(n) > 1 && n[0] == '+' && allDigits(n[1:]):
		return n
	case len(n) > 2 && strings.HasPrefix(n, "00") && allDigits(n[2:]):
		return "+" + n[2:]
	case len(n) >= 11 && len(n) <= 15 && allDigits(n):
		return "+" + n
	}
	return n
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
