// Command chronos is the Chronos scheduler in one binary: serve (API,
// reactor and listener), migrate, tap (the event stream), receive (a demo
// webhook target), version, and the subcommands other files register (bench).
//
// Every subcommand parses its own flags with the standard flag package and
// answers --help. Exit codes: 0 success, 1 failure at run time, 2 bad usage
// or configuration.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
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
	env := &environ{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	code := runMain(ctx, os.Args[1:], env)
	stop()
	os.Exit(code)
}

// runMain dispatches to a subcommand and turns its error into an exit code.
func runMain(ctx context.Context, args []string, env *environ) int {
	if len(args) == 0 {
		printHelp(env.stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			if c, ok := commands[args[1]]; ok {
				return exitCode(env, c.run(ctx, []string{"--help"}, env))
			}
			fmt.Fprintf(env.stderr, "chronos: unknown command %q\n", args[1])
			return 2
		}
		printHelp(env.stdout)
		return 0
	case "-version", "--version":
		name = "version"
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(env.stderr, "chronos: unknown command %q (try `chronos help`)\n", name)
		return 2
	}
	return exitCode(env, c.run(ctx, args[1:], env))
}

// exitCode prints err (if any) as one line and maps it to an exit code.
func exitCode(env *environ, err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(env.stderr, "chronos: %v\n", err)
	var u usageError
	if errors.As(err, &u) {
		return 2
	}
	return 1
}

func printHelp(w io.Writer) {
	fmt.Fprint(w, "chronos: a distributed cron scheduler on Postgres.\n\nUsage: chronos <command> [flags]\n\nCommands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, commands[n].summary)
	}
	fmt.Fprint(w, "  help      show this help, or `chronos help <command>`\n\nRun `chronos <command> --help` for the flags of a command.\n")
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
