package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "voicebench:", err)
		os.Exit(1)
	}
}

// run dispatches the subcommands; "load" is the default.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd := "load"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "load":
		return runLoad(ctx, args, stdout, stderr)
	case "echo":
		return runEcho(ctx, args, stdout, stderr)
	case "compare":
		return runCompare(args, stdout, stderr)
	case "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return fmt.Errorf("unknown command %q (load, echo, compare, help)", cmd)
}

const usage = `voicebench: load and quality benchmarks for voice media nodes.

  voicebench [load] --mode sip|rtpengine|echo|ws|webrtc [flags]   put N calls on a target and measure them
  voicebench echo --port P --count N                        run the UDP echo floor (one socket per call)
  voicebench compare --out FILE RESULT-DIR...               side-by-side tables from several runs
  voicebench load -h                                        every load flag

Results go to --out: results.json, summary.md, latency.svg, jitter.svg, cpu.svg.
`
