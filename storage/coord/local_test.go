package coord_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/storage/coord"
	"github.com/voiced/voiced/storage/coord/coordtest"
)

func TestLocalContract(t *testing.T) {
	coordtest.Run(t, func(t *testing.T, cfg coord.Config) coord.Coordinator {
		l := coord.NewLocal(cfg)
		t.Cleanup(func() { require.NoError(t, l.Close()) })
		return l
	})
}
