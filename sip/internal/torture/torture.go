// Package torture reads the RFC 4475 torture messages kept as test data
// in the RFC's notation.
package torture

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Load reads one RFC 4475 message from dir/name.txt and returns its
// bytes on the wire. The file uses the RFC's notation (section 2.1): every
// line ends in CRLF on the wire; the lines between <allOneLine> and
// </allOneLine> are one line; <hex>..</hex> are the octets of those hex
// digits; <repeat count=N>..</repeat> is its text N times.
func Load(dir, name string) ([]byte, error) {
	text, err := os.ReadFile(filepath.Join(dir, name+".txt"))
	if err != nil {
		return nil, err
	}
	return Decode(string(text))
}

// Decode turns the RFC 4475 notation into the message's octets.
func Decode(text string) ([]byte, error) {
	var out bytes.Buffer
	one := false
	for line := range strings.SplitSeq(strings.TrimSuffix(text, "\n"), "\n") {
		switch line {
		case "<allOneLine>":
			one = true
			continue
		case "</allOneLine>":
			one = false
			out.WriteString("\r\n")
			continue
		}
		b, err := decodeInline(line)
		if err != nil {
			return nil, err
		}
		out.Write(b)
		if !one {
			out.WriteString("\r\n")
		}
	}
	if one {
		return nil, fmt.Errorf("torture: <allOneLine> not closed")
	}
	return out.Bytes(), nil
}

func decodeInline(s string) ([]byte, error) {
	var out []byte
	for {
		i := strings.IndexByte(s, '<')
		if i < 0 {
			return append(out, s...), nil
		}
		out = append(out, s[:i]...)
		s = s[i:]
		switch {
		case strings.HasPrefix(s, "<hex>"):
			end := strings.Index(s, "</hex>")
			if end < 0 {
				return nil, fmt.Errorf("torture: <hex> not closed")
			}
			b, err := hex.DecodeString(s[len("<hex>"):end])
			if err != nil {
				return nil, err
			}
			out = append(out, b...)
			s = s[end+len("</hex>"):]
		case strings.HasPrefix(s, "<repeat count="):
			gt := strings.IndexByte(s, '>')
			end := strings.Index(s, "</repeat>")
			if gt < 0 || end < gt {
				return nil, fmt.Errorf("torture: bad <repeat>")
			}
			n, err := strconv.Atoi(s[len("<repeat count="):gt])
			if err != nil {
				return nil, err
			}
			out = append(out, strings.Repeat(s[gt+1:end], n)...)
			s = s[end+len("</repeat>"):]
		default:
			out = append(out, '<')
			s = s[1:]
		}
	}
}
