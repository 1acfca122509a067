package sip

import (
	"bytes"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The gate checks every message a listener receives against the SIP
// grammar of RFC 3261 before sipgo parses it, because sipgo's parser is
// lenient where it should refuse (a display name with a comma, a CSeq
// over 2**32) and strict where it should not be, and because a message
// it cannot parse is dropped with no response. RFC 4475 is the test
// suite. For each message the gate does one of three things:
//
//   - pass: the message is good; sipgo parses it. When a header uses
//     the grammar's optional whitespace in a way sipgo's parser keeps
//     inside names and values (LWS around ";" and "=" in parameters,
//     around "/" in a Via, a folded line), the message is passed
//     rewritten with that whitespace removed. Extra octets after the
//     Content-Length's body of a datagram are cut (RFC 3261 18.3).
//   - reject: a request that breaks the grammar gets the response RFC
//     4475 names (400, 505 for another SIP version, 416 for a
//     Request-URI scheme we do not route), built from its raw Via, From,
//     To, Call-ID and CSeq, with a Warning saying what is wrong; sipgo
//     never sees it.
//   - drop: a response with a bad status line or CSeq (other faults in
//     a response are sipgo's to judge: it may answer our own request), a
//     request with no Via to answer, a malformed ACK; counted in
//     Server.Unparseable.
//
// A good message costs a few passes over its header section and no
// allocation (BenchmarkGate).

type gateAction uint8

const (
	gatePass gateAction = iota
	gateReject
	gateDrop
)

// gateResult is the gate's decision on one message.
type gateResult struct {
	action gateAction
	// msg is the message to hand sipgo on pass: the input, a prefix of
	// it, or a rewritten copy.
	msg []byte
	// res is the response on reject; why says what was wrong.
	res []byte
	why string
	// rport and port address a UDP reject (RFC 3261 18.2.2, RFC 3581):
	// the source port when the top Via has rport, else port.
	rport bool
	port  int
}

// gateOpts are the gate's settings from the Server.
type gateOpts struct {
	userAgent string
}

// header kinds the gate checks; others pass as they are.
type hkind uint8

const (
	hOther hkind = iota
	hVia
	hFrom
	hTo
	hCallID
	hCSeq
	hContact
	hRoute
	hContentLength
	hMaxForwards
	hDate
)

// kindOf maps a header name (any case, compact forms) to its kind.
func kindOf(name []byte) hkind {
	switch len(name) {
	case 1:
		switch name[0] | 0x20 {
		case 'v':
			return hVia
		case 'f':
			return hFrom
		case 't':
			return hTo
		case 'i':
			return hCallID
		case 'm':
			return hContact
		case 'l':
			return hContentLength
		}
	case 2:
		if eqFold(name, "to") {
			return hTo
		}
	case 3:
		if eqFold(name, "via") {
			return hVia
		}
	case 4:
		switch {
		case eqFold(name, "from"):
			return hFrom
		case eqFold(name, "cseq"):
			return hCSeq
		case eqFold(name, "date"):
			return hDate
		}
	case 5:
		if eqFold(name, "route") {
			return hRoute
		}
	case 7:
		switch {
		case eqFold(name, "call-id"):
			return hCallID
		case eqFold(name, "contact"):
			return hContact
		}
	case 12:
		switch {
		case eqFold(name, "max-forwards"):
			return hMaxForwards
		case eqFold(name, "record-route"):
			return hRoute
		}
	case 14:
		if eqFold(name, "content-length") {
			return hContentLength
		}
	}
	return hOther
}

func eqFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// tokenChar reports whether c may appear in a token (RFC 3261 25.1).
var tokenChar = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "-.!%*_+`'~" {
		t[c] = true
	}
	return t
}()

func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !tokenChar[c] {
			return false
		}
	}
	return true
}

func isDigits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// digitsBelow reports whether b is 1*DIGIT of value at most max.
func digitsBelow(b []byte, max uint64) bool {
	if !isDigits(b) {
		return false
	}
	var v uint64
	for _, c := range b {
		v = v*10 + uint64(c-'0')
		if v > max {
			return false
		}
	}
	return true
}

func isWS(c byte) bool { return c == ' ' || c == '\t' }

func trimWS(b []byte) []byte {
	for len(b) > 0 && (isWS(b[0]) || b[0] == '\r' || b[0] == '\n') {
		b = b[1:]
	}
	for len(b) > 0 && (isWS(b[len(b)-1]) || b[len(b)-1] == '\r' || b[len(b)-1] == '\n') {
		b = b[:len(b)-1]
	}
	return b
}

func skipWS(b []byte) []byte {
	for len(b) > 0 && isWS(b[0]) {
		b = b[1:]
	}
	return b
}

// hdr is one header field: its kind, raw name and value (unfolded and
// trimmed: a copy when the field was folded), and whether the value
// needs rewriting for sipgo.
type hdr struct {
	kind  hkind
	name  []byte
	value []byte
	canon []byte // non-nil: the value sipgo gets
}

// scratch is the gate's reusable state.
type scratch struct {
	hdrs []hdr
	buf  []byte // canonical values, appended
}

var scratchPool = sync.Pool{New: func() any { return &scratch{hdrs: make([]hdr, 0, 32), buf: make([]byte, 0, 1024)} }}

// gateError is a reason to refuse a message; code is the status.
type gateError struct {
	code int
	why  string
	cseq bool // the CSeq is bad
}

var crlfcrlf = []byte("\r\n\r\n")

// inspect checks one whole message: a datagram (stream false) or one
// framed from a stream (stream true, body exactly Content-Length).
func inspect(data []byte, stream bool, o *gateOpts) gateResult {
	msg := data
	// RFC 3261 7.5: CRLFs before the start line are ignored.
	for len(msg) >= 2 && msg[0] == '\r' && msg[1] == '\n' {
		msg = msg[2:]
	}
	if len(msg) == 0 {
		return gateResult{action: gatePass, msg: data}
	}
	head, body := msg, []byte(nil)
	if i := bytes.Index(msg, crlfcrlf); i >= 0 {
		head, body = msg[:i+2], msg[i+4:]
	}
	sc := scratchPool.Get().(*scratch)
	defer func() {
		sc.hdrs, sc.buf = sc.hdrs[:0], sc.buf[:0]
		scratchPool.Put(sc)
	}()
	eol := bytes.IndexByte(head, '\n')
	if eol < 0 {
		eol = len(head)
	}
	start := bytes.TrimSuffix(head[:eol], []byte("\r"))
	splitHeaders(head[min(eol+1, len(head)):], sc)

	isResponse := bytes.HasPrefix(start, []byte("SIP/"))
	var ge *gateError
	var method []byte
	if isResponse {
		ge = checkStatusLine(start)
	} else {
		method, ge = checkRequestLine(start)
	}
	if ge == nil {
		ge = checkHeaders(sc, method, isResponse)
		if ge != nil && isResponse && !ge.cseq {
			// A response we may be waiting for: RFC 4475 asks only
			// that a bad status code or CSeq be discarded; the rest is
			// sipgo's to judge.
			return gateResult{action: gatePass, msg: data}
		}
	}
	cl := -1
	if ge == nil {
		for i := range sc.hdrs {
			if sc.hdrs[i].kind == hContentLength {
				cl, _ = strconv.Atoi(string(sc.hdrs[i].value))
			}
		}
		switch {
		case cl > len(body):
			ge = &gateError{code: 400, why: "Content-Length is larger than the body"}
		case cl < 0 && stream:
			// RFC 3261 18.3: a stream cannot be framed without it.
			ge = &gateError{code: 400, why: "no Content-Length on a stream"}
		}
	}
	if ge != nil {
		if isResponse || bytes.Equal(method, []byte("ACK")) {
			return gateResult{action: gateDrop, why: ge.why}
		}
		return reject(sc, ge, o)
	}
	rewrite := false
	for i := range sc.hdrs {
		if sc.hdrs[i].canon != nil {
			rewrite = true
			break
		}
	}
	if !rewrite {
		if cl >= 0 && cl < len(body) {
			// RFC 3261 18.3: octets after the body are dropped.
			return gateResult{action: gatePass, msg: data[:len(data)-len(body)+cl]}
		}
		return gateResult{action: gatePass, msg: data}
	}
	if cl >= 0 && cl < len(body) {
		body = body[:cl]
	}
	out := make([]byte, 0, len(msg))
	out = append(out, start...)
	out = append(out, "\r\n"...)
	for _, h := range sc.hdrs {
		out = append(out, h.name...)
		out = append(out, ": "...)
		if h.canon != nil {
			out = append(out, h.canon...)
		} else {
			out = append(out, h.value...)
		}
		out = append(out, "\r\n"...)
	}
	out = append(out, "\r\n"...)
	out = append(out, body...)
	return gateResult{action: gatePass, msg: out}
}

// splitHeaders splits a header section into fields, unfolding
// continuation lines. A line that is no "name: value" becomes a field
// with no name, which checkHeaders refuses.
func splitHeaders(b []byte, sc *scratch) {
	for len(b) > 0 {
		// One field: up to a line end not followed by SP or HT.
		end, next := len(b), len(b)
		folded := false
		for from := 0; ; {
			i := bytes.IndexByte(b[from:], '\n')
			if i < 0 {
				break
			}
			i += from
			if i+1 < len(b) && isWS(b[i+1]) {
				folded = true
				from = i + 1
				continue
			}
			end, next = i, i+1
			break
		}
		line := b[:end]
		b = b[next:]
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(trimWS(line)) == 0 {
			continue
		}
		// field-name HCOLON: a token, optional whitespace, a colon.
		n := tokenLen(line)
		rest := skipWS(line[n:])
		if n == 0 || len(rest) == 0 || rest[0] != ':' {
			sc.hdrs = append(sc.hdrs, hdr{value: line}) // refused below
			continue
		}
		name, value := line[:n], rest[1:]
		if folded {
			value = unfold(value)
		}
		sc.hdrs = append(sc.hdrs, hdr{kind: kindOf(name), name: name, value: trimWS(value)})
	}
}

// unfold replaces each CRLF and the whitespace around it by one space.
func unfold(v []byte) []byte {
	out := make([]byte, 0, len(v))
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\r' || c == '\n' {
			for len(out) > 0 && isWS(out[len(out)-1]) {
				out = out[:len(out)-1]
			}
			for i+1 < len(v) && (isWS(v[i+1]) || v[i+1] == '\r' || v[i+1] == '\n') {
				i++
			}
			out = append(out, ' ')
			continue
		}
		out = append(out, c)
	}
	return out
}

// checkStatusLine: SIP-Version SP 3DIGIT SP Reason-Phrase.
func checkStatusLine(s []byte) *gateError {
	if len(s) < 11 || string(s[:8]) != "SIP/2.0 " || !isDigits(s[8:11]) || len(s) > 11 && s[11] != ' ' || s[8] == '0' {
		return &gateError{code: 400, why: "bad status line"}
	}
	return nil
}

// checkRequestLine: Method SP Request-URI SP SIP-Version, single
// spaces, nothing around (RFC 3261 25.1). It returns the method.
func checkRequestLine(s []byte) ([]byte, *gateError) {
	sp1 := bytes.IndexByte(s, ' ')
	if sp1 <= 0 {
		return nil, &gateError{code: 400, why: "bad request line"}
	}
	method := s[:sp1]
	rest := s[sp1+1:]
	sp2 := bytes.IndexByte(rest, ' ')
	if !isToken(method) || sp2 <= 0 {
		return method, &gateError{code: 400, why: "bad request line"}
	}
	uri, version := rest[:sp2], rest[sp2+1:]
	if !isVersion(version) {
		return method, &gateError{code: 400, why: "bad request line"}
	}
	if string(version) != "SIP/2.0" {
		return method, &gateError{code: 505, why: "SIP version not supported"}
	}
	if why := checkURI(uri); why != "" {
		return method, &gateError{code: 400, why: "Request-URI " + why}
	}
	if !supportedScheme(uri) {
		// RFC 3261 8.2.2.1.
		return method, &gateError{code: 416, why: "Request-URI scheme not supported"}
	}
	if hasURIHeaders(uri) {
		// RFC 3261 19.1.5: headers are not allowed in a Request-URI.
		return method, &gateError{code: 400, why: "Request-URI has headers"}
	}
	return method, nil
}

// supportedScheme reports whether a Request-URI is sip, sips or tel.
func supportedScheme(u []byte) bool {
	colon := bytes.IndexByte(u, ':')
	s := u[:colon]
	return eqFold(s, "sip") || eqFold(s, "sips") || eqFold(s, "tel")
}

// isVersion: "SIP" "/" 1*DIGIT "." 1*DIGIT.
func isVersion(v []byte) bool {
	if len(v) < 7 || string(v[:4]) != "SIP/" {
		return false
	}
	dot := bytes.IndexByte(v[4:], '.')
	return dot > 0 && isDigits(v[4:4+dot]) && isDigits(v[5+dot:])
}

// checkURI: scheme ":" and something, with no character a URI cannot
// hold unescaped (whitespace, controls, <, >, ", and non-ASCII).
func checkURI(u []byte) string {
	colon := bytes.IndexByte(u, ':')
	if colon <= 0 || colon == len(u)-1 {
		return "has no scheme"
	}
	for i, c := range u[:colon] {
		if !(c|0x20 >= 'a' && c|0x20 <= 'z' || i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return "has a bad scheme"
		}
	}
	for _, c := range u[colon+1:] {
		if c <= ' ' || c >= 0x7f || c == '<' || c == '>' || c == '"' {
			return "has a character URIs cannot hold"
		}
	}
	return ""
}

// hasURIHeaders reports whether a sip or sips URI has headers ("?"
// after its host: the user part may hold "?" itself).
func hasURIHeaders(u []byte) bool {
	if !(len(u) > 4 && eqFold(u[:4], "sip:") || len(u) > 5 && eqFold(u[:5], "sips:")) {
		return false
	}
	if at := bytes.IndexByte(u, '@'); at >= 0 {
		u = u[at:]
	}
	return bytes.IndexByte(u, '?') >= 0
}

// checkHeaders checks the fields the gate knows and, when one needs
// whitespace taken out for sipgo, sets its canon.
func checkHeaders(sc *scratch, method []byte, isResponse bool) *gateError {
	var seen [hDate + 1]int
	for i := range sc.hdrs {
		h := &sc.hdrs[i]
		if h.name == nil {
			return &gateError{code: 400, why: "malformed header line"}
		}
		seen[h.kind]++
		var why string
		mark := len(sc.buf)
		switch h.kind {
		case hVia:
			sc.buf, why = viaList(sc.buf, h.value)
		case hFrom, hTo:
			sc.buf, why = nameAddrList(sc.buf, h.value, false)
		case hContact:
			if string(h.value) == "*" {
				continue
			}
			sc.buf, why = nameAddrList(sc.buf, h.value, true)
		case hRoute:
			sc.buf, why = nameAddrList(sc.buf, h.value, true)
		case hCallID:
			if len(h.value) == 0 || bytes.ContainsAny(h.value, " \t") {
				why = "bad Call-ID"
			}
		case hCSeq:
			if why = checkCSeq(h.value, method, isResponse); why != "" {
				return &gateError{code: 400, why: "CSeq: " + why, cseq: true}
			}
		case hMaxForwards:
			if !digitsBelow(h.value, 255) {
				why = "Max-Forwards is not 0 to 255"
			}
		case hContentLength:
			if !digitsBelow(h.value, 1<<31-1) {
				why = "bad Content-Length"
			}
		case hDate:
			if _, err := time.Parse(time.RFC1123, string(h.value)); err != nil || !bytes.HasSuffix(h.value, []byte(" GMT")) {
				why = "Date is not an RFC 1123 date in GMT"
			}
		}
		if why != "" {
			return &gateError{code: 400, why: string(h.name) + ": " + why}
		}
		if len(sc.buf) > mark && !bytes.Equal(sc.buf[mark:], h.value) {
			h.canon = sc.buf[mark:len(sc.buf):len(sc.buf)]
		}
	}
	for _, k := range []hkind{hFrom, hTo, hCallID, hCSeq, hMaxForwards, hContentLength} {
		if seen[k] > 1 {
			return &gateError{code: 400, why: "more than one " + kindName[k]}
		}
	}
	for _, k := range []hkind{hVia, hFrom, hTo, hCallID, hCSeq} {
		if seen[k] == 0 {
			return &gateError{code: 400, why: "no " + kindName[k]}
		}
	}
	return nil
}

var kindName = [...]string{hVia: "Via", hFrom: "From", hTo: "To", hCallID: "Call-ID", hCSeq: "CSeq",
	hMaxForwards: "Max-Forwards", hContentLength: "Content-Length", hDate: "Date"}

// checkCSeq: 1*DIGIT LWS Method, the number a 32-bit unsigned integer
// (RFC 3261 8.1.1.5), the method the request's (but for ACK and
// CANCEL, which some peers get wrong and sipgo's transaction layer
// matches anyway).
func checkCSeq(v, method []byte, isResponse bool) string {
	sp := bytes.IndexAny(v, " \t")
	if sp < 0 {
		return "bad value"
	}
	num, m := v[:sp], skipWS(v[sp:])
	if !digitsBelow(num, 1<<32-1) {
		return "number is not a 32-bit unsigned integer"
	}
	if !isToken(m) {
		return "bad method"
	}
	if !isResponse && !bytes.Equal(m, method) && string(method) != "ACK" && string(method) != "CANCEL" {
		return "method is not the request's"
	}
	return ""
}

// sws skips SWS and returns what follows.
func sws(b []byte) []byte { return skipWS(b) }

// viaList checks a Via value: via-parm *(COMMA via-parm), each
// sent-protocol LWS sent-by *(SEMI via-params). It appends the value
// with the optional whitespace removed.
func viaList(w, v []byte) ([]byte, string) {
	for first := true; ; first = false {
		if !first {
			w = append(w, ',')
		}
		v = sws(v)
		// sent-protocol: protocol-name SLASH protocol-version SLASH transport
		for part := range 3 {
			n := tokenLen(v)
			if n == 0 {
				return w, "bad Via"
			}
			w = append(w, v[:n]...)
			v = sws(v[n:])
			if part < 2 {
				if len(v) == 0 || v[0] != '/' {
					return w, "bad Via"
				}
				w = append(w, '/')
				v = sws(v[1:])
			}
		}
		w = append(w, ' ')
		// sent-by: host [COLON port]
		n := hostLen(v)
		if n == 0 {
			return w, "bad Via sent-by"
		}
		w = append(w, v[:n]...)
		v = sws(v[n:])
		if len(v) > 0 && v[0] == ':' {
			v = sws(v[1:])
			p := 0
			for p < len(v) && v[p] >= '0' && v[p] <= '9' {
				p++
			}
			if p == 0 || p > 5 {
				return w, "bad Via port"
			}
			w = append(w, ':')
			w = append(w, v[:p]...)
			v = sws(v[p:])
		}
		var why string
		if w, v, why = params(w, v); why != "" {
			return w, why
		}
		if len(v) == 0 {
			return w, ""
		}
		if v[0] != ',' {
			return w, "bad Via"
		}
		v = v[1:]
	}
}

// wordLen is tokenLen for a display name's words, which may also
// hold UTF-8: RFC 3261 wants such a name quoted, but unquoted it is
// not ambiguous (a comma is, baddn), and phones send it.
func wordLen(b []byte) int {
	n := 0
	for n < len(b) && (tokenChar[b[n]] || b[n] >= 0x80) {
		n++
	}
	return n
}

func tokenLen(b []byte) int {
	n := 0
	for n < len(b) && tokenChar[b[n]] {
		n++
	}
	return n
}

// hostLen is the length of a host at the start of b: a hostname or
// IPv4 address (token characters), or an IPv6 reference in brackets.
func hostLen(b []byte) int {
	if len(b) > 0 && b[0] == '[' {
		if i := bytes.IndexByte(b, ']'); i > 1 {
			return i + 1
		}
		return 0
	}
	return tokenLen(b)
}

// params checks *(SEMI generic-param) at the start of v, appending
// them without whitespace; it stops at a comma or the end.
func params(w, v []byte) ([]byte, []byte, string) {
	for {
		v = sws(v)
		if len(v) == 0 || v[0] == ',' {
			return w, v, ""
		}
		if v[0] != ';' {
			return w, v, "has text where a parameter should be"
		}
		v = sws(v[1:])
		n := tokenLen(v)
		if n == 0 {
			return w, v, "has an empty parameter"
		}
		w = append(w, ';')
		w = append(w, v[:n]...)
		v = sws(v[n:])
		if len(v) == 0 || v[0] != '=' {
			continue
		}
		v = sws(v[1:])
		w = append(w, '=')
		if len(v) > 0 && v[0] == '"' {
			q := quotedLen(v)
			if q == 0 {
				return w, v, "has an unterminated quoted string"
			}
			w = append(w, v[:q]...)
			v = v[q:]
			continue
		}
		// gen-value is a token or a host; taken more loosely (up to a
		// separator) since peers put URNs and the like there unquoted,
		// which is no ambiguity.
		if n = valueLen(v); n == 0 {
			return w, v, "has an empty parameter value"
		}
		w = append(w, v[:n]...)
		v = v[n:]
	}
}

// valueLen is the length of a parameter value at the start of v: up
// to whitespace, a separator, a quote or an angle bracket.
func valueLen(v []byte) int {
	n := 0
	for n < len(v) {
		switch c := v[n]; c {
		case ';', ',', ' ', '\t', '\r', '\n', '"', '<', '>':
			return n
		default:
			if c < ' ' || c == 0x7f {
				return n
			}
		}
		n++
	}
	return n
}

// quotedLen is the length of the quoted-string at the start of v
// (which starts with a quote), or 0 when it is not terminated.
func quotedLen(v []byte) int {
	for i := 1; i < len(v); i++ {
		switch v[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		case '\r', '\n':
			return 0
		}
	}
	return 0
}

// nameAddrList checks a From, To (list false: one value), Contact,
// Route or Record-Route value: (name-addr / addr-spec) *(SEMI param),
// comma-separated when list. RFC 3261 20: a display name is a quoted
// string or tokens; in <> the URI has no whitespace around it; a URI
// not in <> holds no comma, semicolon or question mark. It appends the
// value with the parameters' optional whitespace removed.
func nameAddrList(w, v []byte, list bool) ([]byte, string) {
	for first := true; ; first = false {
		if !first {
			w = append(w, ',')
		}
		v = sws(v)
		// display-name, or the URI of an addr-spec.
		startDisplay := v
		if len(v) > 0 && v[0] == '"' {
			q := quotedLen(v)
			if q == 0 {
				return w, "has an unterminated quoted string"
			}
			v = sws(v[q:])
			if len(v) == 0 || v[0] != '<' {
				return w, "has a quoted display name and no <URI>"
			}
		} else {
			for {
				n := wordLen(v)
				rest := v[n:]
				if n > 0 && len(rest) > 0 && rest[0] == ':' && len(startDisplay) == len(v) {
					// scheme ":" - an addr-spec.
					break
				}
				v = sws(rest)
				if len(v) == 0 || v[0] == '<' {
					break
				}
				if n == 0 || len(rest) == len(v) {
					return w, "has a display name that is not tokens or a quoted string"
				}
			}
		}
		if len(v) > 0 && v[0] == '<' {
			display := bytes.TrimRight(startDisplay[:len(startDisplay)-len(v)], " \t")
			w = append(w, display...)
			if len(display) > 0 && len(display) < len(startDisplay)-len(v) {
				w = append(w, ' ')
			}
			end := bytes.IndexByte(v, '>')
			if end < 0 {
				return w, "has < without >"
			}
			uri := v[1:end]
			if why := checkURI(uri); why != "" {
				return w, "URI " + why
			}
			w = append(w, v[:end+1]...)
			v = v[end+1:]
		} else {
			n := 0
			for n < len(v) && v[n] != ';' && v[n] != ',' && !isWS(v[n]) {
				n++
			}
			uri := v[:n]
			if why := checkURI(uri); why != "" {
				return w, "URI " + why
			}
			if bytes.IndexByte(uri, '?') >= 0 && hasURIHeaders(uri) {
				return w, "has a URI with headers outside <>"
			}
			w = append(w, uri...)
			v = v[n:]
		}
		var why string
		if w, v, why = params(w, v); why != "" {
			return w, why
		}
		if len(v) == 0 {
			return w, ""
		}
		if !list {
			return w, "has more than one address"
		}
		v = v[1:] // the comma
	}
}

// reject builds the response to a request the gate refuses, or drops
// the request when it has no Via to answer.
func reject(sc *scratch, ge *gateError, o *gateOpts) gateResult {
	var top, from, to, callID, cseq []byte
	for i := range sc.hdrs {
		h := &sc.hdrs[i]
		switch {
		case h.kind == hVia && top == nil:
			top = h.value
		case h.kind == hFrom && from == nil:
			from = h.value
		case h.kind == hTo && to == nil:
			to = h.value
		case h.kind == hCallID && callID == nil:
			callID = h.value
		case h.kind == hCSeq && cseq == nil:
			cseq = h.value
		}
	}
	port, rport, ok := viaAddr(top)
	if !ok {
		return gateResult{action: gateDrop, why: ge.why}
	}
	res := make([]byte, 0, 512)
	res = append(res, "SIP/2.0 "...)
	res = strconv.AppendInt(res, int64(ge.code), 10)
	switch ge.code {
	case 416:
		res = append(res, " Unsupported URI Scheme\r\n"...)
	case 505:
		res = append(res, " Version Not Supported\r\n"...)
	default:
		res = append(res, " Bad Request\r\n"...)
	}
	// RFC 3261 8.2.6.2: every Via in order, From, To (with our tag),
	// Call-ID and CSeq, as the request has them.
	for i := range sc.hdrs {
		if h := &sc.hdrs[i]; h.kind == hVia {
			res = appendHeader(res, "Via", h.value)
		}
	}
	if from != nil {
		res = appendHeader(res, "From", from)
	}
	if to != nil {
		res = appendHeader(res, "To", to)
		if needsTag(sc, to) {
			res = res[:len(res)-2]
			res = append(res, ";tag="...)
			res = strconv.AppendUint(res, tagSeq.Add(1)^uint64(time.Now().UnixNano()), 36)
			res = append(res, "\r\n"...)
		}
	}
	if callID != nil {
		res = appendHeader(res, "Call-ID", callID)
	}
	if cseq != nil {
		res = appendHeader(res, "CSeq", cseq)
	}
	res = append(res, "Warning: 399 voiced \""...)
	for _, c := range []byte(ge.why) {
		if c >= ' ' && c < 0x7f && c != '"' && c != '\\' {
			res = append(res, c)
		}
	}
	res = append(res, "\"\r\n"...)
	if o != nil && o.userAgent != "" {
		res = appendHeader(res, "Server", []byte(o.userAgent))
	}
	res = append(res, "Content-Length: 0\r\n\r\n"...)
	return gateResult{action: gateReject, res: res, why: ge.why, port: port, rport: rport}
}

var tagSeq atomic.Uint64

func appendHeader(b []byte, name string, value []byte) []byte {
	b = append(b, name...)
	b = append(b, ": "...)
	b = append(b, value...)
	return append(b, "\r\n"...)
}

// needsTag reports whether a To value is well formed and has no tag, so
// our response adds one (RFC 3261 8.2.6.2). A malformed To is copied
// as it is.
func needsTag(sc *scratch, to []byte) bool {
	mark := len(sc.buf)
	var why string
	sc.buf, why = nameAddrList(sc.buf, to, false)
	canon := sc.buf[mark:]
	sc.buf = sc.buf[:mark]
	if why != "" {
		return false
	}
	// The parameters follow the URI; a tag inside <> is the URI's.
	if i := bytes.LastIndexByte(canon, '>'); i >= 0 {
		canon = canon[i:]
	}
	for {
		i := bytes.IndexByte(canon, ';')
		if i < 0 {
			return true
		}
		canon = canon[i+1:]
		if len(canon) >= 4 && eqFold(canon[:4], "tag=") {
			return false
		}
	}
}

// viaAddr reads the port of a top Via's sent-by (0 when it names
// none) and whether it asks for rport; ok is false when the Via is too
// broken to answer.
func viaAddr(v []byte) (port int, rport, ok bool) {
	if v == nil {
		return 0, false, false
	}
	v = sws(v)
	for part := range 3 {
		n := tokenLen(v)
		if n == 0 {
			return 0, false, false
		}
		v = sws(v[n:])
		if part < 2 {
			if len(v) == 0 || v[0] != '/' {
				return 0, false, false
			}
			v = sws(v[1:])
		}
	}
	n := hostLen(v)
	if n == 0 {
		return 0, false, false
	}
	v = sws(v[n:])
	if len(v) > 0 && v[0] == ':' {
		v = sws(v[1:])
		p := 0
		for p < len(v) && v[p] >= '0' && v[p] <= '9' && p < 5 {
			port = port*10 + int(v[p]-'0')
			p++
		}
		if port > 65535 {
			return 0, false, false
		}
		v = v[p:]
	}
	// Look for an rport parameter before the next via-parm.
	for len(v) > 0 && v[0] != ',' {
		if v[0] != ';' {
			v = v[1:]
			continue
		}
		v = sws(v[1:])
		if len(v) >= 5 && eqFold(v[:5], "rport") && (len(v) == 5 || !tokenChar[v[5]]) {
			rest := sws(v[5:])
			if len(rest) == 0 || rest[0] != '=' {
				rport = true
			}
		}
	}
	return port, rport, true
}
