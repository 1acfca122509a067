package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"

	"github.com/voiced/voiced/cmd/voicebench/internal/echo"
)

// runEcho serves the UDP echo floor until ctx ends.
func runEcho(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("echo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1", "address to listen on")
	port := fs.Int("port", 0, "first port of consecutive ports; 0 = any free ports (see --list)")
	count := fs.Int("count", 1000, "sockets (one per call)")
	list := fs.String("list", "", "write the sockets' addresses to this file, one per line, for load --echo-list")
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
	addrs := s.Addrs()
	if *list != "" {
		var b strings.Builder
		for _, a := range addrs {
			b.WriteString(a.String() + "\n")
		}
		if err := os.WriteFile(*list, []byte(b.String()), 0o644); err != nil {
			s.Close()
			return err
		}
	}
	fmt.Fprintf(stdout, "echoing on %d sockets from %s\n", len(addrs), addrs[0])
	<-ctx.Done()
	return s.Close()
}
