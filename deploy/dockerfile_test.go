package deploy_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// TestDockerfile parses the Dockerfile with BuildKit's own parser (no
// Docker engine is needed) and checks the prod stage: the last stage (the
// default target), a numeric non-root user, a HEALTHCHECK that runs the
// binary's own probe, and a build that stamps version and commit.
func TestDockerfile(t *testing.T) {
	ast := parseFile(t, repo("Dockerfile"), "Dockerfile", parser.Parse)
	stages, _, err := instructions.Parse(ast.AST, nil)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	byName := map[string]instructions.Stage{}
	for _, s := range stages {
		byName[s.Name] = s
	}
	prod, ok := byName["prod"]
	if !ok || stages[len(stages)-1].Name != "prod" {
		t.Fatal("no prod stage, or it is not the last (default) one")
	}
	var user string
	var health *instructions.HealthCheckCommand
	for _, c := range prod.Commands {
		switch c := c.(type) {
		case *instructions.UserCommand:
			user = c.User
		case *instructions.HealthCheckCommand:
			health = c
		}
	}
	uid, _, _ := strings.Cut(user, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("prod USER %q: want a numeric non-root uid (Kubernetes checks runAsNonRoot only for numeric users)", user)
	}
	if health == nil || health.Health == nil {
		t.Fatal("prod stage has no HEALTHCHECK")
	}
	if test := strings.Join(health.Health.Test, " "); !strings.Contains(test, "chronos health") {
		t.Errorf("HEALTHCHECK %q does not run `chronos health`", test)
	}
	build, ok := byName["build"]
	if !ok {
		t.Fatal("no build stage")
	}
	stamped := false
	for _, c := range build.Commands {
		if r, ok := c.(*instructions.RunCommand); ok {
			cmd := strings.Join(r.CmdLine, " ")
			stamped = stamped || (strings.Contains(cmd, "-X main.version=") && strings.Contains(cmd, "-X main.commit="))
		}
	}
	if !stamped {
		t.Error("the build stage does not stamp main.version and main.commit with -ldflags")
	}
}
