package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"github.com/stretchr/testify/require"
)

// chromium is a headless Chromium driven over the Chrome DevTools
// Protocol: a WebSocket to the browser, one page target attached in flat
// mode, and Runtime.evaluate. Just enough CDP for the browser tests.
type chromium struct {
	t       testing.TB
	cmd     *exec.Cmd
	conn    net.Conn
	session string

	wmu     sync.Mutex // serializes writes
	mu      sync.Mutex
	nextID  int
	pending map[int]chan cdpReply
	done    chan struct{}
	readErr error

	closeOnce sync.Once
}

type cdpReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// chromiumPath finds the browser; under CI=true its absence fails.
func chromiumPath(t testing.TB) string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is required under CI=true (apt-get install chromium)")
	}
	t.Skip("chromium not installed (apt-get install chromium); skipping the browser test")
	return ""
}

// startChromium launches headless Chromium with a fake microphone playing
// wavPath and extra flags, and attaches to a blank page.
func startChromium(t testing.TB, wavPath string, extra ...string) *chromium {
	t.Helper()
	bin := chromiumPath(t)
	args := append([]string{
		"--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream",
		"--use-file-for-fake-audio-capture=" + wavPath,
		"--allow-loopback-in-peer-connection", "--autoplay-policy=no-user-gesture-required",
		"--disable-features=WebRtcHideLocalIpsWithMdns",
		"--no-first-run", "--no-default-browser-check", "--disable-extensions", "--mute-audio",
		"--remote-debugging-port=0", "--user-data-dir=" + t.TempDir(),
	}, extra...)
	args = append(args, "about:blank")
	cmd := exec.Command(bin, args...)
	// Its own process group, so close ends the renderer and helper
	// processes with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	c := &chromium{t: t, cmd: cmd, pending: map[int]chan cdpReply{}, done: make(chan struct{})}
	t.Cleanup(c.close)
	wsRe := regexp.MustCompile(`DevTools listening on (ws://\S+)`)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := wsRe.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	var wsURL string
	select {
	case wsURL = <-found:
	case <-time.After(30 * time.Second):
		t.Fatal("chromium did not start its DevTools endpoint")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.conn, _, _, err = ws.Dial(ctx, wsURL)
	require.NoError(t, err)
	go c.read()
	var target struct {
		TargetID string `json:"targetId"`
	}
	c.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var att struct {
		SessionID string `json:"sessionId"`
	}
	c.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att)
	c.session = att.SessionID
	c.call(c.session, "Runtime.enable", nil, nil)
	c.call(c.session, "Page.enable", nil, nil)
	return c
}

// read dispatches replies to their callers; events are ignored.
func (c *chromium) read() {
	defer close(c.done)
	for {
		b, err := wsutil.ReadServerText(c.conn)
		if err != nil {
			c.mu.Lock()
			c.readErr = err
			c.mu.Unlock()
			return
		}
		var m struct {
			ID int `json:"id"`
			cdpReply
		}
		if json.Unmarshal(b, &m) != nil || m.ID == 0 {
			continue
		}
		c.mu.Lock()
		ch := c.pending[m.ID]
		delete(c.pending, m.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- m.cdpReply
		}
	}
}

// call sends one command and decodes its result into out (may be nil).
func (c *chromium) call(session, method string, params any, out any) {
	c.t.Helper()
	require.NoError(c.t, c.try(session, method, params, out), "CDP %s", method)
}

func (c *chromium) try(session, method string, params any, out any) error {
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	ch := make(chan cdpReply, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	err = wsutil.WriteClientText(c.conn, b)
	c.wmu.Unlock()
	if err != nil {
		return err
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return errors.New(r.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(r.Result, out)
		}
		return nil
	case <-c.done:
		return fmt.Errorf("chromium connection closed: %v", c.readErr)
	case <-time.After(60 * time.Second):
		return errors.New("no reply in 60 s")
	}
}

// navigate loads url and waits for the page to finish loading.
func (c *chromium) navigate(url string) {
	c.t.Helper()
	c.call(c.session, "Page.navigate", map[string]any{"url": url}, nil)
	require.Eventually(c.t, func() bool {
		var s string
		return c.evalErr(`document.readyState + (location.href === "about:blank" ? "-blank" : "")`, &s) == nil && s == "complete"
	}, 20*time.Second, 50*time.Millisecond, "page %s did not load", url)
}

// eval runs expr in the page (awaiting a promise, as a user gesture) and
// decodes its JSON value into out.
func (c *chromium) eval(expr string, out any) {
	c.t.Helper()
	require.NoError(c.t, c.evalErr(expr, out), "evaluate %s", expr)
}

func (c *chromium) evalErr(expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := c.try(c.session, "Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true, "userGesture": true}, &r); err != nil {
		return err
	}
	if r.ExceptionDetails != nil {
		return fmt.Errorf("%s %s", r.ExceptionDetails.Text, strings.TrimSpace(r.ExceptionDetails.Exception.Description))
	}
	if out == nil || len(r.Result.Value) == 0 {
		return nil
	}
	return json.Unmarshal(r.Result.Value, out)
}

// close ends the browser; it may be called again (the test's cleanup
// does).
func (c *chromium) close() {
	c.closeOnce.Do(c.end)
}

func (c *chromium) end() {
	if c.conn != nil {
		c.conn.Close()
	}
	if p := c.cmd.Process; p != nil {
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
		_ = c.cmd.Wait()
	}
}
