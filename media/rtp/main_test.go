package rtp

import (
	"testing"

	"github.com/voiced/voiced/media/mediatest"
)

// TestMain fails the run if media goroutines outlive the tests.
func TestMain(m *testing.M) { mediatest.RunWithLeakCheck(m) }
