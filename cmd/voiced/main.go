// Command voiced is the voiced server: one binary with subcommands.
//
//	voiced serve     run the all-in-one server (API and the media front doors)
//	voiced control   run the control plane of a scaled-out deployment
//	voiced media     run a media node of a scaled-out deployment (no database)
//	voiced migrate   apply database migrations and exit
//	voiced admin     bootstrap, create users, tokens, orgs and keys, add credit
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "voiced:", err)
		os.Exit(2)
	}
}

const usage = `voiced: self-hostable platform for voice AI agents

usage:
  voiced serve   [flags]   run the all-in-one server (first run on an empty database prints an API key)
  voiced control [flags]   scale-out: the /v1 API, billing, webhooks, workers and the internal API for media nodes
  voiced media   [flags]   scale-out: a SIP/RTP, WebRTC and realtime node; no database, reaches control over --control-url
  voiced migrate [flags]   apply database migrations and exit
  voiced admin   COMMAND   bootstrap | create-user | create-token | create-org | create-key | add-credit

Run "voiced COMMAND --help" for the flags of a command.
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("missing command")
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stdout, stderr)
	case "control":
		return controlRole(ctx, args[1:], stdout, stderr)
	case "media":
		return mediaRole(ctx, args[1:], stdout, stderr)
	case "migrate":
		return migrate(ctx, args[1:], stdout, stderr)
	case "admin":
		return admin(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	case "version", "--version":
		fmt.Fprintln(stdout, version)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}

// parse sets up a FlagSet for cmd with the named flags (all when none),
// parses args and environment, and prints help on -h.
func parse(cmd, summary string, args []string, stdout io.Writer, c *config, extra func(*flag.FlagSet), names ...string) (*flag.FlagSet, error) {
	fs := flag.NewFlagSet("voiced "+cmd, flag.ContinueOnError)
	specs := bindFlags(fs, c, names...)
	if extra != nil {
		extra(fs)
	}
	err := parseFlags(fs, specs, c, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stdout, "usage: voiced %s [flags]\n\n%s\n\nflags:\n", cmd, summary)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return nil, err
	}
	return fs, err
}

func newLogger(c *config, w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(c.LogLevel))
	opts := &slog.HandlerOptions{Level: lvl}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func randRead(b []byte) (int, error) { return rand.Read(b) }
