package siptest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voiced/voiced/codecs/wav"
)

// Baresip is a running baresip user agent: a real softphone on loopback
// that sends a 440 Hz tone (ausine) and dumps what it hears to WAV files
// (sndfile). It auto-answers calls to Addr.
type Baresip struct {
	cmd  *exec.Cmd
	dir  string
	out  syncBuffer
	done chan error
	// Port is its SIP port on 127.0.0.1.
	Port int
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// BaresipOptions configure StartBaresip.
type BaresipOptions struct {
	// Codecs is the account's audio_codecs, e.g. "PCMU/8000/1".
	Codecs string
	// Source is a WAV file (48 kHz stereo S16) baresip sends instead of
	// a 440 Hz tone.
	Source string
	// Quit stops baresip after this long.
	Quit time.Duration
	// Commands run at start, e.g. "/dial sip:...".
	Commands []string
}

// StartBaresip starts baresip on loopback with o.
func StartBaresip(t testing.TB, o BaresipOptions) *Baresip {
	t.Helper()
	codecs, quit, commands := o.Codecs, o.Quit, o.Commands
	source := "ausine,440"
	if o.Source != "" {
		source = "aufile," + o.Source
	}
	bin := Binary(t, "baresip", "baresip-core")
	b := &Baresip{dir: t.TempDir(), done: make(chan error, 1), Port: freePortPair(t, "127.0.0.1")}
	config := fmt.Sprintf(`poll_method epoll
sip_listen 127.0.0.1:%d
sip_trans_def udp
audio_player aubridge,x
audio_source %s
audio_alert aubridge,y
ausrc_srate 48000
ausrc_channels 2
auplay_srate 48000
auplay_channels 2
rtp_ports 30000-39999
module_path /usr/lib/baresip/modules
module g711.so
module ausine.so
module aufile.so
module aubridge.so
module sndfile.so
module_app account.so
module_app menu.so
snd_path %s
`, b.Port, source, b.dir)
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(b.dir, name), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("config", config)
	write("accounts", "<sip:alice@127.0.0.1:"+strconv.Itoa(b.Port)+">;regint=0;answermode=auto;audio_codecs="+codecs+"\n")
	write("contacts", "")
	args := []string{"-f", b.dir, "-t", strconv.Itoa(int(quit.Seconds() + 0.5))}
	for _, c := range commands {
		args = append(args, "-e", c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), quit+10*time.Second)
	b.cmd = exec.CommandContext(ctx, bin, args...)
	b.cmd.Dir = b.dir
	b.cmd.Stdout, b.cmd.Stderr = &b.out, &b.out
	if err := b.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start baresip: %v", err)
	}
	go func() {
		b.done <- b.cmd.Wait()
		cancel()
	}()
	t.Cleanup(func() {
		select {
		case <-b.done:
		default:
			b.cmd.Process.Kill()
			<-b.done
		}
	})
	return b
}

// Wait waits for baresip to exit and returns its output.
func (b *Baresip) Wait() (string, error) {
	err := <-b.done
	b.done <- err
	return b.out.String(), err
}

// Output returns what baresip printed so far.
func (b *Baresip) Output() string { return b.out.String() }

// Dumps returns the WAV files sndfile wrote: "-dec" files hold what
// baresip received.
func (b *Baresip) Dumps() []string {
	files, _ := filepath.Glob(filepath.Join(b.dir, "dump-*.wav"))
	return files
}

// Received returns what baresip heard (its sndfile "-dec" dump) as mono
// samples at rate.
func (b *Baresip) Received() (rate int, mono []int16, err error) {
	var dec string
	for _, f := range b.Dumps() {
		if strings.HasSuffix(f, "-dec.wav") {
			dec = f
		}
	}
	if dec == "" {
		return 0, nil, errors.New("baresip dumped no received audio")
	}
	fh, err := os.Open(dec)
	if err != nil {
		return 0, nil, err
	}
	defer fh.Close()
	format, pcm, err := wav.ReadAll(fh)
	if err != nil {
		return 0, nil, err
	}
	if format.Channels == 1 {
		return format.SampleRate, pcm, nil
	}
	mono = make([]int16, len(pcm)/format.Channels)
	for i := range mono {
		mono[i] = pcm[i*format.Channels]
	}
	return format.SampleRate, mono, nil
}

// freePortPair returns a port p such that p and p+1 were free for UDP and
// TCP on ip a moment ago: baresip listens for SIP/TLS on sip_listen's
// port plus one, and exits when that is taken.
func freePortPair(t testing.TB, ip string) int {
	t.Helper()
	for range 50 {
		p := FreePort(t, ip)
		u, err := net.ListenPacket("udp", net.JoinHostPort(ip, strconv.Itoa(p+1)))
		if err != nil {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(p+1)))
		u.Close()
		if err != nil {
			continue
		}
		l.Close()
		return p
	}
	t.Fatal("no free port pair")
	return 0
}
