package ng

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAppendVectors(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   any
		want string
	}{
		{"string", "spam", "4:spam"},
		{"empty string", "", "0:"},
		{"bytes", []byte{0, 'a'}, "2:\x00a"},
		{"int", 42, "i42e"},
		{"negative", int64(-3), "i-3e"},
		{"zero", 0, "i0e"},
		{"bool", true, "i1e"},
		{"strings", []string{"trust-address", "SIP-source-address"}, "l13:trust-address18:SIP-source-addresse"},
		{"mixed list", []any{"a", 1, []any{}}, "l1:ai1elee"},
		// keys sort as raw bytes: "call-id" < "command" < "sdp"
		{"dict", map[string]any{"sdp": "v=0", "command": "offer", "call-id": "x"}, "d7:call-id1:x7:command5:offer3:sdp3:v=0e"},
		{"nested", map[string]any{"codec": map[string]any{"transcode": []string{"opus"}}}, "d5:codecd9:transcodel4:opuseee"},
		{"string map", map[string]string{"b": "2", "a": "1"}, "d1:a1:11:b1:2e"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Append(nil, tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
		})
	}
	_, err := Append(nil, 1.5)
	require.ErrorIs(t, err, ErrType)
	_, err = Append(nil, map[string]any{"k": []any{struct{}{}}})
	require.ErrorIs(t, err, ErrType)
}

func TestDecodeRoundTrip(t *testing.T) {
	in := map[string]any{
		"result": "ok",
		"sdp":    "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\n",
		"tags":   []any{"a", int64(-7), map[string]any{}},
		"port":   int64(30000),
	}
	b, err := Append(nil, in)
	require.NoError(t, err)
	out, err := Decode(b)
	require.NoError(t, err)
	require.Equal(t, in, out)
}

func TestDecodeRejects(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"empty", ""},
		{"unterminated int", "i42"},
		{"leading zero", "i03e"},
		{"negative zero", "i-0e"},
		{"not a number", "iabe"},
		{"string overrun", "5:abc"},
		{"no colon", "3abc"},
		{"length leading zero", "03:abc"},
		{"unterminated list", "l1:a"},
		{"unterminated dict", "d1:a1:b"},
		{"int key", "di1e1:ae"},
		{"dict missing value", "d1:ae"},
		{"trailing", "i1ei2e"},
		{"bad byte", "x"},
		{"deep", string(make([]byte, 0)) + repeat("l", 100) + repeat("e", 100)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.in))
			require.ErrorIs(t, err, ErrSyntax)
		})
	}
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{"d6:result4:ponge", "l1:ai1ee", "i-5e", "3:abc", "d3:sdpl1:xee"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := Decode(b)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes to a value that decodes the same.
		enc, err := Append(nil, v)
		if err != nil {
			t.Fatalf("decoded %T does not encode: %v", v, err)
		}
		again, err := Decode(enc)
		if err != nil {
			t.Fatalf("re-encoding %q does not decode: %v", enc, err)
		}
		require.Equal(t, v, again)
	})
}
