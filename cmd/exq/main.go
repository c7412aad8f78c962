// Command exq operates the jobs in a Redis shared by exq, Exq and Sidekiq nodes: counters,
// queues, one job wherever it is, retry/scheduled/dead jobs, processes, periodic jobs, and
// signals to nodes.
//
//	exq COMMAND [ARGS] [--redis-url URL] [--namespace NS[,NS…]] [--json]
//
// Run `exq --help`, `exq help COMMAND` or `exq COMMAND --help`.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"golang.org/x/term"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/textsafe"
)

func main() {
	// SIGTERM too: process managers stop `exq web` (and a long --watch) with it.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], env{
		getenv: os.Getenv, stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr,
		stdinTTY:  term.IsTerminal(int(os.Stdin.Fd())),
		stdoutTTY: term.IsTerminal(int(os.Stdout.Fd())),
		stderrTTY: term.IsTerminal(int(os.Stderr.Fd())),
	})
	stop()
	os.Exit(code)
}

// env is what one invocation reads and writes, and which of its streams are terminals.
type env struct {
	getenv                         func(string) string
	stdin                          io.Reader
	stdout, stderr                 io.Writer
	stdinTTY, stdoutTTY, stderrTTY bool
}

// Exit codes (docs/operating.md, "The exq command").
const (
	exitOK    = 0
	exitError = 1 // Redis failed, something was not found, a confirmation was declined
	exitUsage = 2 // bad command line or bad input: nothing was written
)

// usageError is a bad command line or bad input: exit 2.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

func run(ctx context.Context, args []string, e env) int {
	a := &app{env: e, rawStdout: e.stdout, rawStderr: e.stderr}
	// Everything printed may hold strings read from Redis: nothing reaches a terminal
	// unescaped (textsafe), and --json output is valid JSON whatever the bytes in Redis.
	termOut, jsonOut, termErr := textsafe.NewTerminalWriter(e.stdout), textsafe.NewJSONWriter(e.stdout), textsafe.NewTerminalWriter(e.stderr)
	a.stdout = outWriter{a: a, term: termOut, json: jsonOut}
	a.stderr = termErr
	defer func() { _, _, _ = termOut.Flush(), jsonOut.Flush(), termErr.Flush() }()
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetIn(e.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	cmd, err := root.ExecuteContextC(ctx)
	a.close()
	if err == nil {
		return exitOK
	}
	var plugin pluginExit
	if errors.As(err, &plugin) {
		return plugin.code // the plugin said why on stderr
	}
	name := "exq"
	if cmd != nil && cmd != root {
		name = cmd.CommandPath()
		if as := cmd.CalledAs(); as != "" && as != cmd.Name() && cmd.HasParent() {
			name = cmd.Parent().CommandPath() + " " + as // an alias: "exq retry" says so
		}
	}
	code := exitCode(err)
	msg := strings.TrimPrefix(err.Error(), "exq: ")
	if code == exitUsage {
		msg += fmt.Sprintf(" (see %s --help)", name)
	}
	fmt.Fprintf(a.stderr, "%s: %s\n", name, oneLine(msg))
	return code
}

// outWriter is stdout made safe: as JSON text with --json, for a terminal otherwise.
type outWriter struct {
	a          *app
	term, json *textsafe.Writer
}

func (w outWriter) Write(p []byte) (int, error) {
	if w.a.json {
		return w.json.Write(p)
	}
	return w.term.Write(p)
}

// exitCode sorts an error into runtime failure (1) and bad input (2).
func exitCode(err error) int {
	var u usageError
	switch {
	case errors.As(err, &u), errors.Is(err, exq.ErrInvalidJob), errors.Is(err, exq.ErrInvalidOptions),
		errors.Is(err, exq.ErrInvalidQueue), errors.Is(err, exq.ErrInvalidPeriodic):
		return exitUsage
	case strings.HasPrefix(err.Error(), "unknown command "), strings.HasPrefix(err.Error(), "unknown flag"):
		return exitUsage // cobra's own
	}
	return exitError
}

// oneLine keeps an error on one line of stderr.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
