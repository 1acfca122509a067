package sdp

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriteParseRoundTrip(t *testing.T) {
	addr := netip.MustParseAddrPort("127.0.0.1:40002")
	s := Write(addr, 7, Opus, PCMU)
	require.Equal(t, "v=0\r\no=voicebench 7 1 IN IP4 127.0.0.1\r\ns=voicebench\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"+
		"m=audio 40002 RTP/AVP 111 0\r\na=rtpmap:111 opus/48000/2\r\na=rtpmap:0 PCMU/8000\r\na=ptime:20\r\na=rtcp-mux\r\na=sendrecv\r\n", s)
	m, err := Parse(s)
	require.NoError(t, err)
	require.Equal(t, addr, m.Addr)
	require.Equal(t, []Codec{Opus, PCMU}, m.Codecs)
	c, err := m.Pick(PCMU)
	require.NoError(t, err)
	require.Equal(t, PCMU, c)
	_, err = m.Pick(PCMA)
	require.ErrorIs(t, err, ErrNoCodec)
}

func TestParsePeerAnswers(t *testing.T) {
	// sipp's built-in UAS answer: static payload type, no rtpmap.
	sipp := "v=0\r\no=user1 53655765 2353687637 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 6000 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n"
	m, err := Parse(sipp)
	require.NoError(t, err)
	require.Equal(t, netip.MustParseAddrPort("127.0.0.1:6000"), m.Addr)
	require.Equal(t, []Codec{PCMU}, m.Codecs)

	// rtpengine rewrites with a media-level c= line, rtcp and telephone-event.
	rtpe := "v=0\no=- 1 1 IN IP4 127.0.0.1\ns=-\nt=0 0\nm=audio 30010 RTP/AVP 96 8 101\nc=IN IP4 127.0.0.5\n" +
		"a=rtpmap:96 opus/48000/2\na=rtpmap:101 telephone-event/8000\na=rtcp:30011\na=sendrecv\nm=video 0 RTP/AVP 31\nc=IN IP4 10.0.0.1\n"
	m, err = Parse(rtpe)
	require.NoError(t, err)
	require.Equal(t, netip.MustParseAddrPort("127.0.0.5:30010"), m.Addr)
	require.Equal(t, []Codec{{Name: "opus", PT: 96, Clock: 48000, Channels: 2}, PCMA, {Name: "telephone-event", PT: 101, Clock: 8000, Channels: 1}}, m.Codecs)
	c, err := m.Pick(PCMU, Opus)
	require.NoError(t, err)
	require.Equal(t, uint8(96), c.PT, "the answer's payload type wins")
}

func TestParseRejects(t *testing.T) {
	for name, s := range map[string]string{
		"no audio":      "v=0\r\nc=IN IP4 127.0.0.1\r\nm=video 5000 RTP/AVP 31\r\n",
		"port zero":     "v=0\r\nc=IN IP4 127.0.0.1\r\nm=audio 0 RTP/AVP 0\r\n",
		"no connection": "v=0\r\nm=audio 5000 RTP/AVP 0\r\n",
		"ipv6 only":     "v=0\r\nc=IN IP6 ::1\r\nm=audio 5000 RTP/AVP 0\r\n",
		"empty":         "",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(s)
			require.ErrorIs(t, err, ErrNoAudio)
		})
	}
}

func TestCodecByName(t *testing.T) {
	c, ok := CodecByName("OPUS")
	require.True(t, ok)
	require.Equal(t, 960, c.SamplesPerFrame())
	_, ok = CodecByName("G729")
	require.False(t, ok)
}
