package ng

import (
	"fmt"
	"slices"
	"strconv"
)

// Append appends the bencoding of v to dst.
func Append(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case string:
		dst = strconv.AppendInt(dst, int64(len(x)), 10)
		dst = append(dst, ':')
		return append(dst, x...), nil
	case []byte:
		dst = strconv.AppendInt(dst, int64(len(x)), 10)
		dst = append(dst, ':')
		return append(dst, x...), nil
	case int:
		return appendInt(dst, int64(x)), nil
	case int64:
		return appendInt(dst, x), nil
	case int32:
		return appendInt(dst, int64(x)), nil
	case uint16:
		return appendInt(dst, int64(x)), nil
	case bool:
		if x {
			return appendInt(dst, 1), nil
		}
		return appendInt(dst, 0), nil
	case []string:
		dst = append(dst, 'l')
		for _, s := range x {
			dst, _ = Append(dst, s)
		}
		return append(dst, 'e'), nil
	case []any:
		dst = append(dst, 'l')
		for _, e := range x {
			var err error
			if dst, err = Append(dst, e); err != nil {
				return dst, err
			}
		}
		return append(dst, 'e'), nil
	case map[string]string:
		dst = append(dst, 'd')
		for _, k := range sortedKeys(x) {
			dst, _ = Append(dst, k)
			dst, _ = Append(dst, x[k])
		}
		return append(dst, 'e'), nil
	case map[string]any:
		dst = append(dst, 'd')
		for _, k := range sortedKeys(x) {
			dst, _ = Append(dst, k)
			var err error
			if dst, err = Append(dst, x[k]); err != nil {
				return dst, fmt.Errorf("key %q: %w", k, err)
			}
		}
		return append(dst, 'e'), nil
	}
	return dst, fmt.Errorf("%w %T", ErrType, v)
}

func appendInt(dst []byte, n int64) []byte {
	dst = append(dst, 'i')
	dst = strconv.AppendInt(dst, n, 10)
	return append(dst, 'e')
}

// sortedKeys returns the keys in raw byte order, as bencode requires.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// maxDepth bounds nesting so hostile input cannot exhaust the stack.
const maxDepth = 64

// Decode parses exactly one bencoded value filling all of b.
func Decode(b []byte) (any, error) {
	v, n, err := decode(b, 0, 0)
	if err != nil {
		return nil, err
	}
	if n != len(b) {
		return nil, fmt.Errorf("%w: %d trailing bytes at offset %d", ErrSyntax, len(b)-n, n)
	}
	return v, nil
}

func decode(b []byte, at, depth int) (any, int, error) {
	if at >= len(b) {
		return nil, at, fmt.Errorf("%w: unexpected end at offset %d", ErrSyntax, at)
	}
	if depth > maxDepth {
		return nil, at, fmt.Errorf("%w: nesting deeper than %d at offset %d", ErrSyntax, maxDepth, at)
	}
	switch c := b[at]; {
	case c == 'i':
		end := at + 1
		for end < len(b) && b[end] != 'e' {
			end++
		}
		if end == len(b) {
			return nil, at, fmt.Errorf("%w: unterminated integer at offset %d", ErrSyntax, at)
		}
		digits := string(b[at+1 : end])
		n, err := strconv.ParseInt(digits, 10, 64)
		if err != nil || digits == "-0" || (len(digits) > 1 && digits[0] == '0') || (len(digits) > 2 && digits[:2] == "-0") {
			return nil, at, fmt.Errorf("%w: bad integer %q at offset %d", ErrSyntax, digits, at)
		}
		return n, end + 1, nil
	case c >= '0' && c <= '9':
		colon := at
		for colon < len(b) && b[colon] != ':' {
			colon++
		}
		if colon == len(b) {
			return nil, at, fmt.Errorf("%w: string length without colon at offset %d", ErrSyntax, at)
		}
		n, err := strconv.Atoi(string(b[at:colon]))
		if err != nil || (colon-at > 1 && b[at] == '0') {
			return nil, at, fmt.Errorf("%w: bad string length at offset %d", ErrSyntax, at)
		}
		start := colon + 1
		if n > len(b)-start {
			return nil, at, fmt.Errorf("%w: string of %d bytes overruns the input at offset %d", ErrSyntax, n, at)
		}
		return string(b[start : start+n]), start + n, nil
	case c == 'l':
		list := []any{}
		at++
		for {
			if at >= len(b) {
				return nil, at, fmt.Errorf("%w: unterminated list", ErrSyntax)
			}
			if b[at] == 'e' {
				return list, at + 1, nil
			}
			v, next, err := decode(b, at, depth+1)
			if err != nil {
				return nil, next, err
			}
			list = append(list, v)
			at = next
		}
	case c == 'd':
		dict := map[string]any{}
		at++
		for {
			if at >= len(b) {
				return nil, at, fmt.Errorf("%w: unterminated dictionary", ErrSyntax)
			}
			if b[at] == 'e' {
				return dict, at + 1, nil
			}
			k, next, err := decode(b, at, depth+1)
			if err != nil {
				return nil, next, err
			}
			key, ok := k.(string)
			if !ok {
				return nil, at, fmt.Errorf("%w: dictionary key is not a string at offset %d", ErrSyntax, at)
			}
			v, next, err := decode(b, next, depth+1)
			if err != nil {
				return nil, next, err
			}
			dict[key] = v
			at = next
		}
	default:
		return nil, at, fmt.Errorf("%w: unexpected %q at offset %d", ErrSyntax, c, at)
	}
}
