package sdp

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden answers in testdata/")

var testLocal = Local{
	Addr:      netip.MustParseAddrPort("203.0.113.5:30000"),
	Direction: SendRecv,
	Origin:    Origin{Username: "voiced", SessionID: 42, Version: 1},
}

// TestAnswerGolden answers every offer in testdata with all supported
// codecs and compares the answer (or the refusal) to its .golden file.
func TestAnswerGolden(t *testing.T) {
	offers, err := filepath.Glob("testdata/*.sdp")
	require.NoError(t, err)
	require.NotEmpty(t, offers)
	for _, path := range offers {
		name := strings.TrimSuffix(filepath.Base(path), ".sdp")
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(path)
			require.NoError(t, err)
			got := answerText(t, in)
			golden := strings.TrimSuffix(path, ".sdp") + ".golden"
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test -update to create the golden file")
			require.Equal(t, string(want), got)
		})
	}
}

func answerText(t *testing.T, in []byte) string {
	offer, err := Parse(in)
	require.NoError(t, err)
	st, err := Select(offer, Supported())
	if err != nil {
		return "refused: " + err.Error() + "\n"
	}
	ans := Answer(offer, st, testLocal)
	// The answer must parse and select the same stream back.
	back, err := Parse(ans.Bytes())
	require.NoError(t, err)
	st2, err := Select(back, Supported())
	require.NoError(t, err)
	require.Equal(t, st.Codec.PT, st2.Codec.PT)
	return fmt.Sprintf("stream %d codec %s/%d pt %d dtmf %q pt %d remote %s direction %s ptime %d hold %v\n%s",
		st.Index, st.Codec.Name, st.Codec.ClockRate, st.Codec.PT, st.DTMF.Name, st.DTMF.PT, st.Remote, st.Direction, st.PTime, st.Hold(), ans.Bytes())
}

func TestParseErrors(t *testing.T) {
	base := "v=0\r\no=- 1 1 IN IP4 10.0.0.1\r\ns=-\r\nt=0 0\r\n"
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "", "no v= line"},
		{"not sdp", "hello world\r\n", "line 1"},
		{"version 1", strings.Replace(base, "v=0", "v=1", 1), "want v=0"},
		{"starts with o", "o=- 1 1 IN IP4 10.0.0.1\r\nv=0\r\n", "must start with v="},
		{"no origin", "v=0\r\ns=-\r\nt=0 0\r\n", "no o= line"},
		{"no timing", "v=0\r\no=- 1 1 IN IP4 10.0.0.1\r\ns=-\r\n", "no t= line"},
		{"origin fields", strings.Replace(base, "o=- 1 1 IN IP4 10.0.0.1", "o=- 1 IN IP4 10.0.0.1", 1), "o=<username>"},
		{"origin version", strings.Replace(base, "o=- 1 1", "o=- 1 x", 1), "numbers"},
		{"origin nettype", strings.Replace(base, " IN ", " ATM ", 1), "network type"},
		{"two origins", base + "o=- 1 1 IN IP4 10.0.0.1\r\n", "misplaced o="},
		{"bad connection", base + "c=IN IPX 1.2.3.4\r\n", "c=IN"},
		{"media port", base + "m=audio 70000 RTP/AVP 0\r\n", "0-65535"},
		{"media negative port", base + "m=audio -1 RTP/AVP 0\r\n", "0-65535"},
		{"media pt", base + "m=audio 4000 RTP/AVP 200\r\n", "payload type"},
		{"media no formats", base + "m=audio 4000 RTP/AVP\r\n", "m=<media>"},
		{"uppercase type", base + "X=1\r\n", "type=value"},
		{"blank line inside", "v=0\r\n\r\no=- 1 1 IN IP4 10.0.0.1\r\ns=-\r\nt=0 0\r\n", "empty line"},
		{"bad timing", strings.Replace(base, "t=0 0", "t=now", 1), "t=<start>"},
		{"bad bandwidth", base + "b=64\r\n", "b=<type>"},
		{"empty attribute", base + "a=\r\n", "empty attribute"},
		{"t inside media", base + "m=audio 4000 RTP/AVP 0\r\nt=0 0\r\n", "inside a media"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in))
			require.ErrorIs(t, err, ErrSyntax)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestParseKeepsEverything(t *testing.T) {
	in, err := os.ReadFile("testdata/baresip-opus.sdp")
	require.NoError(t, err)
	s, err := Parse(in)
	require.NoError(t, err)
	require.Equal(t, Origin{Username: "-", SessionID: 1848102853, Version: 3384564932, AddrType: "IP4", Address: "192.168.1.20"}, s.Origin)
	require.Len(t, s.Media, 1)
	m := s.Media[0]
	require.Equal(t, []string{"96", "0", "8", "101"}, m.Formats)
	require.Equal(t, []string{"AS:77"}, m.Bandwidths)
	v, ok := m.Attr("rtcp")
	require.True(t, ok)
	require.Equal(t, "10173 IN IP4 192.168.1.20", v)
	require.Equal(t, []Codec{
		{PT: 96, Name: "opus", ClockRate: 48000, Channels: 2, Fmtp: "stereo=1;sprop-stereo=1"},
		{PT: 0, Name: "PCMU", ClockRate: 8000, Channels: 1},
		{PT: 8, Name: "PCMA", ClockRate: 8000, Channels: 1},
		{PT: 101, Name: "telephone-event", ClockRate: 8000, Channels: 1, Fmtp: "0-15"},
	}, m.Codecs())
	// Writing and reading again gives the same description.
	again, err := Parse(s.Bytes())
	require.NoError(t, err)
	require.Equal(t, s, again)
	require.Equal(t, string(in), string(s.Bytes()), "a CRLF description in RFC order is written back byte for byte")
}

func TestSelectHonoursLocalList(t *testing.T) {
	offer := mustParse(t, "testdata/baresip-opus.sdp")
	// A trunk limited to PCMA gets PCMA although the offer prefers Opus.
	st, err := Select(offer, []Codec{PCMA, TelephoneEvent8k})
	require.NoError(t, err)
	require.Equal(t, "PCMA", st.Codec.Name)
	require.Equal(t, uint8(101), st.DTMF.PT)
	// Without any telephone-event locally, no DTMF is chosen.
	st, err = Select(offer, []Codec{PCMU})
	require.NoError(t, err)
	require.Equal(t, "PCMU", st.Codec.Name)
	require.Empty(t, st.DTMF.Name)
	_, err = Select(offer, []Codec{{Name: "G722", ClockRate: 8000, PT: 9}})
	require.ErrorIs(t, err, ErrNoCodec)
}

// TestSelectAnswerToOurOffer: a remote answering our offer may renumber
// dynamic payload types; we send with theirs and receive with ours.
func TestSelectAnswerToOurOffer(t *testing.T) {
	offer := Offer([]Codec{Opus, PCMU, TelephoneEvent48k, TelephoneEvent8k}, testLocal)
	out := string(offer.Bytes())
	require.Contains(t, out, "m=audio 30000 RTP/AVP 111 0 110 101\r\n")
	require.Contains(t, out, "a=rtpmap:111 opus/48000/2\r\na=fmtp:111 minptime=10;useinbandfec=1\r\n")
	answer := []byte("v=0\r\no=peer 9 9 IN IP4 192.0.2.9\r\ns=-\r\nc=IN IP4 192.0.2.9\r\nt=0 0\r\n" +
		"m=audio 7000 RTP/AVP 98 99\r\na=rtpmap:98 OPUS/48000/2\r\na=rtpmap:99 telephone-event/48000\r\n")
	st, err := Select(mustParseBytes(t, answer), Supported())
	require.NoError(t, err)
	require.Equal(t, uint8(98), st.Codec.PT)
	require.Equal(t, uint8(111), st.RecvPT)
	require.Equal(t, uint8(99), st.DTMF.PT)
	require.Equal(t, uint8(110), st.RecvDTMFPT)
	require.Equal(t, netip.MustParseAddrPort("192.0.2.9:7000"), st.Remote)
}

func TestDirections(t *testing.T) {
	for _, tc := range []struct {
		ours, theirs, want Direction
	}{
		{SendRecv, SendRecv, SendRecv},
		{SendRecv, SendOnly, RecvOnly},
		{SendRecv, RecvOnly, SendOnly},
		{SendRecv, Inactive, Inactive},
		{SendOnly, SendOnly, Inactive},
		{RecvOnly, SendRecv, RecvOnly},
		{Inactive, SendRecv, Inactive},
	} {
		t.Run(tc.ours.String()+"-"+tc.theirs.String(), func(t *testing.T) {
			require.Equal(t, tc.want, tc.ours.Intersect(tc.theirs.Reverse()))
		})
	}
}

func TestHold(t *testing.T) {
	for name, want := range map[string]bool{"hold-sendonly": true, "hold-rfc2543": true, "sipp-uac": false, "video-and-audio": true} {
		st, err := Select(mustParse(t, "testdata/"+name+".sdp"), Supported())
		require.NoError(t, err)
		require.Equal(t, want, st.Hold(), name)
	}
}

func mustParse(t *testing.T, path string) *Session {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return mustParseBytes(t, b)
}

func mustParseBytes(t *testing.T, b []byte) *Session {
	t.Helper()
	s, err := Parse(b)
	require.NoError(t, err)
	return s
}

func BenchmarkParse(b *testing.B) {
	in, err := os.ReadFile("testdata/baresip-opus.sdp")
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(in); err != nil {
			b.Fatal(err)
		}
	}
}
