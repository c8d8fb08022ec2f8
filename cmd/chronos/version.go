package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// version and commit are stamped at build time (`make build`, the
// Dockerfile): go build -ldflags "-X main.version=v1.2.3 -X main.commit=<sha>".
// The commit is stamped rather than read from Go's VCS build info because
// container and CI builds often run without .git or with -buildvcs=false.
var (
	version = "dev"
	commit  = ""
)

func init() {
	register(&command{name: "version", summary: "print the version", run: runVersion})
}

func runVersion(_ context.Context, args []string, env *environ) error {
	fs := newFlagSet(env, "version", "", "Prints the version of chronos, the Go version and the VCS revision it was built from.")
	if err := fs.parse(args); err != nil {
		return err
	}
	fmt.Fprintln(env.stdout, versionString())
	return nil
}

// versionString is "chronos <version> (<revision>[-dirty], <go version>)":
// the stamped commit, else the VCS revision Go recorded, else "unknown
// revision".
func versionString() string {
	rev := commit
	dirty := false
	if bi, ok := debug.ReadBuildInfo(); ok && rev == "" {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		rev = "unknown revision"
	} else if dirty {
		rev += "-dirty"
	}
	return fmt.Sprintf("chronos %s (%s, %s %s/%s)", version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
