// Command chronos is the Chronos scheduler in one binary: serve (API,
// reactor and listener), migrate, tap (the event stream), receive (a demo
// webhook target), bench, health, version, and the operators' commands
// over the REST API: jobs, runs and apply (jobs as code).
//
// The root is a spf13/cobra command (root.go), which gives shell
// completion and one help. The server-side subcommands keep parsing their
// own flags with the standard flag package (registered in the commands
// table, their flags unchanged); the API commands are cobra commands on
// package client. Exit codes: 0 success, 1 failure at run time, 2 bad
// usage or configuration.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/pflag"
)

// command is one subcommand of the binary.
type command struct {
	name    string
	summary string // one line, shown by `chronos help`
	// run executes the command with its arguments (after the name). ctx is
	// cancelled on SIGINT/SIGTERM. It returns an error to print; wrap it in
	// usageError for exit code 2.
	run func(ctx context.Context, args []string, env *environ) error
}

// environ is what a command sees of the process: its streams and
// environment, injectable so commands can be run in-process by tests.
type environ struct {
	stdin          io.Reader // nil reads as empty
	stdout, stderr io.Writer
	getenv         func(string) string
}

// commands is the table of subcommands; files register theirs in init so a
// new subcommand (bench) is one new file.
var commands = map[string]*command{}

func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("chronos: duplicate command " + c.name)
	}
	commands[c.name] = c
}

// usageError marks an error as bad usage or configuration (exit code 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef returns a usageError with a formatted message.
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal, restore the default behaviour so a second
		// Ctrl-C kills a shutdown that hangs.
		<-ctx.Done()
		stop()
	}()
	env := &environ{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	code := runMain(ctx, os.Args[1:], env)
	stop()
	os.Exit(code)
}

// runMain runs the command line on the cobra root (root.go) and turns
// its error into an exit code.
func runMain(ctx context.Context, args []string, env *environ) int {
	if len(args) == 0 {
		printHelp(env.stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help":
		args[0] = "--help"
	case "-version", "--version":
		args = append([]string{"version"}, args[1:]...)
	}
	root := newRoot(ctx, env)
	root.SetArgs(args)
	_, err := root.ExecuteContextC(ctx)
	if err != nil && strings.HasPrefix(err.Error(), "unknown command ") {
		// cobra's own words, `unknown command "x" for "chronos"`: bad usage.
		err = usagef("%v (try `chronos help`)", err)
	}
	return exitCode(env, err)
}

// exitCode prints err (if any) as one line and maps it to an exit code.
func exitCode(env *environ, err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) || errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(env.stderr, "chronos: %v\n", err)
	var u usageError
	if errors.As(err, &u) {
		return 2
	}
	return 1
}

// printHelp prints the root command's help.
func printHelp(w io.Writer) {
	root := newRoot(context.Background(), &environ{stdout: w, stderr: w, getenv: func(string) string { return "" }})
	root.SetOut(w)
	_ = root.Help()
}

// flagSet is a subcommand's flags and where its --help goes.
type flagSet struct {
	*flag.FlagSet
	stdout io.Writer
}

// newFlagSet returns the flag set of a subcommand; its --help prints the
// usage line, the description and the flags to stdout.
func newFlagSet(env *environ, name, usage, description string) *flagSet {
	fs := &flagSet{FlagSet: flag.NewFlagSet("chronos "+name, flag.ContinueOnError), stdout: env.stdout}
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: %s\n\n%s\n", strings.TrimSpace("chronos "+name+" "+usage), strings.TrimSpace(description))
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprint(w, "\nFlags:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parse parses args. --help prints the help to stdout and returns
// flag.ErrHelp (exit 0); a bad flag is a usage error naming the command.
func (fs *flagSet) parse(args []string) error {
	fs.SetOutput(io.Discard) // errors are returned and printed once, by exitCode
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(fs.stdout)
		fs.Usage()
		return err
	case err != nil:
		return usagef("%s: %v (see `%s --help`)", strings.TrimPrefix(fs.Name(), "chronos "), err, fs.Name())
	case fs.NArg() > 0:
		return usagef("%s: unexpected argument %q (see `%s --help`)", strings.TrimPrefix(fs.Name(), "chronos "), fs.Arg(0), fs.Name())
	}
	return nil
}
