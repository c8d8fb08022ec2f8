package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/chronoshq/chronos/bench"
)

// The scenarios themselves are tested in package bench; here, the command
// line: names and flags in any order, and bad values refused as usage
// errors (exit code 2) before anything runs.

func TestBenchArgs(t *testing.T) {
	t.Parallel()
	env := &environ{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: func(string) string { return "" }}
	for _, tc := range []struct {
		args []string
		want []string
		bad  bool
	}{
		{args: []string{"all", "--quick"}, want: bench.Names()},
		{args: []string{"--quick", "latency", "--json", "idle"}, want: []string{"latency", "idle"}},
		{args: []string{"--runs", "10", "throughput"}, want: []string{"throughput"}},
		{args: []string{"burst", "herd", "create", "--quick"}, want: []string{"burst", "herd", "create"}},
		{args: []string{"--quick"}, bad: true},
		{args: []string{"nope"}, bad: true},
		{args: []string{"all", "--nope"}, bad: true},
	} {
		fs := newFlagSet(env, "bench", "", "")
		var cfg bench.Config
		benchFlags(fs, &cfg)
		names, err := parseBenchArgs(fs, tc.args)
		if tc.bad {
			var u usageError
			if err == nil || !errors.As(err, &u) {
				t.Errorf("%v: error %v, want a usage error", tc.args, err)
			}
			continue
		}
		if err != nil || strings.Join(names, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%v: got %v, %v; want %v", tc.args, names, err, tc.want)
		}
	}
}

// TestBenchRefusesBadFlags: every size, rate, count and duration flag
// refuses a negative value (and the counts that must be positive, 0),
// with exit code 2 and a message naming the flag, and no database is
// touched (DATABASE_URL points nowhere).
func TestBenchRefusesBadFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--runs", "-5", "throughput"}, "--runs -5: must not be negative (0 means the default)"},
		{[]string{"throughput", "--triggers", "-1"}, "--triggers -1"},
		{[]string{"latency", "--rate", "-1"}, "--rate -1"},
		{[]string{"latency", "--load-rate", "-1"}, "--load-rate -1"},
		{[]string{"schedule", "--jobs", "-1"}, "--jobs -1"},
		{[]string{"schedule", "--duration", "-5s"}, "--duration -5s"},
		{[]string{"schedule", "--duration", "200ms"}, "--duration 200ms: must be at least 1s"},
		{[]string{"idle", "--idle", "-1s"}, "--idle -1s"},
		{[]string{"scale", "--scale-jobs", "-1"}, "--scale-jobs -1"},
		{[]string{"burst", "--burst-jobs", "-1"}, "--burst-jobs -1"},
		{[]string{"herd", "--herd-jobs", "-100"}, "--herd-jobs -100"},
		{[]string{"create", "--clients", "-16"}, "--clients -16"},
		{[]string{"create", "--create-jobs", "-1"}, "--create-jobs -1"},
		{[]string{"create", "--create-duration", "-1s"}, "--create-duration -1s"},
		{[]string{"sustained", "--sustained-rate", "-1"}, "--sustained-rate -1"},
		{[]string{"sustained", "--sustained-duration", "-1m"}, "--sustained-duration -1m0s"},
		{[]string{"sustained", "--retention", "-2m"}, "--retention -2m0s"},
		{[]string{"throughput", "--repeat", "0"}, "--repeat 0: must be at least 1"},
		{[]string{"throughput", "--repeat", "-5"}, "--repeat -5"},
		{[]string{"throughput", "--instances", "0"}, "--instances 0"},
		{[]string{"throughput", "--concurrency", "-1"}, "--concurrency -1"},
		{[]string{"throughput", "--runs", "many"}, `invalid value "many" for flag -runs`},
		{[]string{"bogus"}, `unknown scenario "bogus"`},
		{[]string{"throughput", "--log-level", "loud"}, `invalid --log-level "loud"`},
	} {
		var stdout, stderr bytes.Buffer
		env := &environ{stdout: &stdout, stderr: &stderr, getenv: func(k string) string {
			if k == "DATABASE_URL" || k == "TEST_DATABASE_URL" {
				return "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1"
			}
			return ""
		}}
		code := runMain(context.Background(), append([]string{"bench"}, tc.args...), env)
		if code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("bench %v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, stderr.String(), tc.want)
		}
		if strings.Contains(stderr.String(), "bench: throughput") || stdout.Len() > 0 {
			t.Errorf("bench %v ran: stdout %q, stderr %q", tc.args, stdout.String(), stderr.String())
		}
	}
}

// TestBenchHelp: the help names every scenario and says what a 0 size means.
func TestBenchHelp(t *testing.T) {
	t.Parallel()
	var stdout bytes.Buffer
	env := &environ{stdout: &stdout, stderr: &bytes.Buffer{}, getenv: func(string) string { return "" }}
	if code := runMain(context.Background(), []string{"bench", "--help"}, env); code != 0 {
		t.Fatalf("bench --help exited %d", code)
	}
	help := stdout.String()
	for _, want := range append(bench.Names(), "0: the default, 50000; quick 5000", "-burst-jobs", "-herd-jobs", "-clients",
		"-create-jobs", "-sustained-rate", "-sustained-duration", "-retention", "0: the default, 20m0s; quick 30s") {
		if !strings.Contains(help, want) {
			t.Errorf("bench --help lacks %q:\n%s", want, help)
		}
	}
}
