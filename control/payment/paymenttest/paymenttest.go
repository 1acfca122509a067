// Package paymenttest runs a real stripe-mock process for tests and signs
// provider events the way Stripe does.
//
// stripe-mock is found on PATH or in $(go env GOPATH)/bin (.ci/run installs
// it with go install). When it is missing the test is skipped with a
// message, except under CI=true, where it fails.
package paymenttest

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85"
)

// Fixtures selects the data stripe-mock answers with.
type Fixtures int

// The fixture sets.
const (
	// Bundled is stripe-mock's own data: a confirmed PaymentIntent comes
	// back requires_payment_method, the state that waits for the client
	// and, in voiced, for the payment-succeeded event.
	Bundled Fixtures = iota
	// Succeeded makes every PaymentIntent come back succeeded.
	Succeeded
)

//go:embed testdata/succeeded.json
var succeededFixtures []byte

// WebhookSecret is the event signing secret tests configure.
const WebhookSecret = "whsec_voiced_test_secret"

// Start runs stripe-mock on a free loopback port until the test ends and
// returns its base URL (http://127.0.0.1:PORT).
func Start(t testing.TB, f Fixtures) string {
	t.Helper()
	bin, err := find()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("stripe-mock is required under CI=true: %v", err)
		}
		t.Skipf("stripe-mock not found (%v); install it with: go install github.com/stripe/stripe-mock@latest", err)
	}
	args := []string{"-http-addr", "127.0.0.1:0", "-https-addr", "127.0.0.1:0"}
	if f == Succeeded {
		path := filepath.Join(t.TempDir(), "fixtures.json")
		if err := os.WriteFile(path, succeededFixtures, 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-fixtures", path)
	}
	cmd := exec.Command(bin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("start stripe-mock: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := make(chan string, 1)
	// The reader lives as long as the process: it drains stripe-mock's
	// output until Cleanup kills it.
	go func() {
		sc := bufio.NewScanner(out)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			if a, ok := strings.CutPrefix(line, "Listening for HTTP at address: "); ok && !sent {
				addr <- strings.TrimSpace(a)
				sent = true
			}
		}
		if !sent {
			close(addr)
		}
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			t.Fatalf("stripe-mock exited before listening")
		}
		return "http://" + a
	case <-time.After(30 * time.Second):
		t.Fatalf("stripe-mock did not start within 30 s")
	}
	return ""
}

func find() (string, error) {
	if p, err := exec.LookPath("stripe-mock"); err == nil {
		return p, nil
	}
	var dirs []string
	if gb := os.Getenv("GOBIN"); gb != "" {
		dirs = append(dirs, gb)
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		for _, p := range filepath.SplitList(strings.TrimSpace(string(out))) {
			dirs = append(dirs, filepath.Join(p, "bin"))
		}
	}
	for _, d := range dirs {
		p := filepath.Join(d, "stripe-mock")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("not on PATH nor in %v", dirs)
}

// Event builds a provider event of type typ around object (a
// PaymentIntent or SetupIntent as JSON-able value) and signs it with
// secret at time at, returning the payload and its Stripe-Signature header.
func Event(t testing.TB, secret, id, typ string, object any, at time.Time) ([]byte, string) {
	t.Helper()
	obj, err := json.Marshal(object)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(map[string]any{
		"id": id, "object": "event", "type": typ, "api_version": stripe.APIVersion, "created": at.Unix(),
		"livemode": false, "pending_webhooks": 1, "data": map[string]any{"object": json.RawMessage(obj)},
	})
	if err != nil {
		t.Fatal(err)
	}
	signed := stripe.GenerateTestSignedPayload(&stripe.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: at})
	return signed.Payload, signed.Header
}
