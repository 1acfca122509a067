package monitoring

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/billing"
	"github.com/voiced/voiced/control/payment"
)

// failingPayments answers every request with err.
type failingPayments struct {
	billing.Provider
	err error
}

func (f failingPayments) Charge(context.Context, payment.Charge) (payment.Intent, error) {
	return payment.Intent{}, f.err
}

// The payment provider's requests feed the heartbeat's window: its own
// failures count, a customer's declined card does not, and a cancelled
// request says nothing.
func TestPaymentOutcomesReachTheHeartbeat(t *testing.T) {
	w := NewWindow(nil)
	for _, err := range []error{
		nil,
		payment.Unavailable(errors.New("connection refused")),
		&payment.Error{Status: http.StatusBadGateway, Code: payment.CodeProviderError},
		&payment.Error{Status: http.StatusPaymentRequired, Code: payment.CodeCardDeclined},
		context.Canceled,
	} {
		_, got := reportedPayments{failingPayments{err: err}, w}.Charge(context.Background(), payment.Charge{})
		require.Equal(t, err, got, "the error is passed on as it is")
	}
	require.Equal(t, ProviderHealth{Requests: 4, Errors: 2}, w.Health()[ProviderPayments])
}
