package ng

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Config tunes a Client. The zero value is the default.
type Config struct {
	// RetryInterval is the wait for a reply before the request is sent
	// again; 0 means 500 ms.
	RetryInterval time.Duration
	// Attempts is how many times a request is sent in all; 0 means 4.
	Attempts int
}

// Client sends ng commands to one rtpengine over UDP.
type Client struct {
	cfg    Config
	conn   *net.UDPConn
	prefix string
	seq    atomic.Uint64

	mu      sync.Mutex
	pending map[string]chan []byte
	closed  bool

	done chan struct{} // closed when the reader has returned
}

// Dial opens a client for the ng listener at addr (host:port, UDP).
func Dial(addr string, cfg Config) (*Client, error) {
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = 500 * time.Millisecond
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 4
	}
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("ng dial %s: %w", addr, err)
	}
	conn, err := net.DialUDP("udp", nil, ua)
	if err != nil {
		return nil, fmt.Errorf("ng dial %s: %w", addr, err)
	}
	c := &Client{
		cfg:     cfg,
		conn:    conn,
		prefix:  strconv.FormatInt(time.Now().UnixNano()%1e9, 36) + "_",
		pending: map[string]chan []byte{},
		done:    make(chan struct{}),
	}
	go c.read()
	return c, nil
}

// Close stops the reader and fails requests in flight with ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	err := c.conn.Close()
	<-c.done
	return err
}

func (c *Client) read() {
	defer close(c.done)
	buf := make([]byte, 65536)
	for {
		n, err := c.conn.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // ICMP errors while rtpengine is not up yet
		}
		sp := bytes.IndexByte(buf[:n], ' ')
		if sp <= 0 {
			continue
		}
		c.mu.Lock()
		ch := c.pending[string(buf[:sp])]
		delete(c.pending, string(buf[:sp]))
		c.mu.Unlock()
		if ch != nil {
			ch <- bytes.Clone(buf[sp+1 : n])
		}
	}
}

// Do sends req (which must hold "command") and returns the reply
// dictionary. A reply with result "error" gives an *Error.
func (c *Client) Do(ctx context.Context, req map[string]any) (map[string]any, error) {
	cmd, _ := req["command"].(string)
	cookie := c.prefix + strconv.FormatUint(c.seq.Add(1), 10)
	msg, err := Append(append([]byte(cookie), ' '), req)
	if err != nil {
		return nil, fmt.Errorf("ng %s: %w", cmd, err)
	}
	ch := make(chan []byte, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	c.pending[cookie] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, cookie)
		c.mu.Unlock()
	}()

	t := time.NewTimer(c.cfg.RetryInterval)
	defer t.Stop()
	for attempt := 1; ; attempt++ {
		if _, err := c.conn.Write(msg); err != nil && !errors.Is(err, syscall.ECONNREFUSED) {
			if errors.Is(err, net.ErrClosed) {
				return nil, ErrClosed
			}
			return nil, fmt.Errorf("ng %s: %w", cmd, err)
		}
		select {
		case b := <-ch:
			return parseReply(cmd, b)
		case <-ctx.Done():
			return nil, fmt.Errorf("ng %s: %w", cmd, ctx.Err())
		case <-c.done:
			return nil, ErrClosed
		case <-t.C:
			if attempt == c.cfg.Attempts {
				return nil, fmt.Errorf("ng %s after %d attempts: %w", cmd, attempt, ErrTimeout)
			}
			t.Reset(c.cfg.RetryInterval)
		}
	}
}

func parseReply(cmd string, b []byte) (map[string]any, error) {
	v, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("ng %s reply: %w", cmd, err)
	}
	d, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("ng %s reply is a %T: %w", cmd, v, ErrSyntax)
	}
	res, ok := d["result"].(string)
	switch {
	case !ok:
		return nil, fmt.Errorf("ng %s: %w", cmd, ErrReply)
	case res == "error":
		reason, _ := d["error-reason"].(string)
		return d, &Error{Command: cmd, Reason: reason}
	}
	return d, nil
}
