package storage

import (
	"strings"
	"testing"
)

// BenchmarkTermSplit measures splitting English prose into index terms,
// the largest share of ingestion's client CPU.
func BenchmarkTermSplit(b *testing.B) {
	text := strings.Repeat("The refund policy covers orders shipped within 30 days; "+
		"customers returning damaged items receive a full refund, shipping included. ", 200)
	b.SetBytes(int64(len(text)))
	var dst []string
	for i := 0; i < b.N; i++ {
		dst = newTermSplitter().terms(dst[:0], text)
	}
	if len(dst) == 0 {
		b.Fatal("no terms")
	}
}
