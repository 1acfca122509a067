package rtp

import (
	"time"

	"github.com/voiced/voiced/media/jitter"
)

func jitterCfg(minMs, maxMs int) jitter.Config {
	return jitter.Config{MinDelay: time.Duration(minMs) * time.Millisecond, MaxDelay: time.Duration(maxMs) * time.Millisecond}
}
