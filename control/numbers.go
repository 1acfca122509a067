package control

import (
	"context"
	"io"
	"time"

	"github.com/voiced/voiced/control/numbers"
)

// The telephony side's view of the numbers domain (control/numbers),
// named here for cmd/voiced.
type (
	// DID is one demo number of the operator's pool.
	DID = numbers.DID
	// VoIPCheck is what a verifier needs to check a trunk for a number.
	VoIPCheck = numbers.VoIPCheck
	// VoIPResult is a verifier's verdict.
	VoIPResult = numbers.VoIPResult
	// VoIPVerifier checks a SIP trunk (WithVoIPVerifier).
	VoIPVerifier = numbers.VoIPVerifier
)

// ParseDIDPool reads a demo number pool file (numbers.ParseDIDPool).
func ParseDIDPool(r io.Reader) ([]DID, error) { return numbers.ParseDIDPool(r) }

// validE164 reports whether s is an E.164 number (numbers.ValidE164).
func validE164(s string) bool { return numbers.ValidE164(s) }

// ProvisionNumbers makes one pass over provisioning demo numbers and
// returns how many changed (numbers.Service.Provision).
func (s *Server) ProvisionNumbers(ctx context.Context) (int, error) { return s.numbers.Provision(ctx) }

// RunProvisioner provisions demo numbers every interval until ctx ends;
// cmd/voiced owns the goroutine that runs it.
func (s *Server) RunProvisioner(ctx context.Context, every time.Duration) { s.numbers.Run(ctx, every) }
