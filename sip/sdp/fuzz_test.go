package sdp

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzSDPParse feeds arbitrary bytes to Parse. Whatever parses must
// write out as SDP that parses again to the same text, and negotiating
// it must not panic.
func FuzzSDPParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.sdp")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("v=0\r\no=- 1 1 IN IP4 1.1.1.1\r\ns=\r\nt=0 0\r\nm=audio 1/2 RTP/AVP 0\r\na=rtpmap:0 x/0\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := Parse(in)
		if err != nil {
			require.ErrorIs(t, err, ErrSyntax)
			return
		}
		out := s.Bytes()
		again, err := Parse(out)
		require.NoError(t, err, "written form does not parse: %q", out)
		require.Equal(t, string(out), string(again.Bytes()))
		if st, err := Select(s, Supported()); err == nil {
			ans := Answer(s, st, testLocal)
			_, err := Parse(ans.Bytes())
			require.NoError(t, err)
		}
	})
}
