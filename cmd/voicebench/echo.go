package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/netip"

	"github.com/voiced/voiced/cmd/voicebench/internal/echo"
)

// runEcho serves the UDP echo floor until ctx ends.
func runEcho(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("echo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1", "address to listen on")
	port := fs.Int("port", 31000, "first port")
	count := fs.Int("count", 1000, "sockets (one per call), on consecutive ports")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ip, err := netip.ParseAddr(*addr)
	if err != nil {
		return fmt.Errorf("--addr: %w", err)
	}
	s, err := echo.Listen(ip, *port, *count)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "echoing on %s ports %d-%d\n", ip, *port, *port+*count-1)
	<-ctx.Done()
	return s.Close()
}
