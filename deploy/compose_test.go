package deploy_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// loadCompose loads ../compose.yaml with the compose specification's own
// loader, schema validation and consistency checks included: what `docker
// compose config` does before it prints anything.
func loadCompose(t *testing.T) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{repo("compose.yaml")},
		cli.WithWorkingDirectory(repo()),
		cli.WithEnv(nil), // the test's own environment must not change the result
		cli.WithConsistency(true),
		cli.WithResolvedPaths(true),
	)
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	return p
}

func TestCompose(t *testing.T) {
	p := loadCompose(t)
	svc := func(name string) types.ServiceConfig {
		t.Helper()
		s, err := p.GetService(name)
		if err != nil {
			t.Fatalf("compose.yaml: %v", err)
		}
		return s
	}

	// Postgres is published on another port than 5432, so it never clashes
	// with a Postgres the user already runs there.
	pg := svc("postgres")
	if len(pg.Ports) != 1 || pg.Ports[0].Target != 5432 || pg.Ports[0].Published == "5432" || pg.Ports[0].Published == "" {
		t.Errorf("postgres ports %+v: want 5432 published on another host port", pg.Ports)
	}
	hostPort := pg.Ports[0].Published

	// Third-party images are pinned to exact versions.
	exact := regexp.MustCompile(`^[a-z0-9/]+:\d+\.\d+(\.\d+)?(-[a-z0-9.]+)?$`)
	for _, name := range []string{"postgres", "adminer"} {
		if img := svc(name).Image; !exact.MatchString(img) {
			t.Errorf("%s image %q is not pinned to an exact version", name, img)
		}
	}

	// Adminer preselects PostgreSQL: the login plugin is mounted.
	adminer := svc("adminer")
	mounted := false
	for _, v := range adminer.Volumes {
		if strings.HasSuffix(v.Source, "deploy/compose/adminer-login.php") && strings.HasPrefix(v.Target, "/var/www/html/plugins-enabled/") {
			mounted = true
			if _, err := os.Stat(v.Source); err != nil {
				t.Errorf("adminer plugin: %v", err)
			}
		}
	}
	if !mounted {
		t.Errorf("adminer does not mount deploy/compose/adminer-login.php into plugins-enabled: %+v", adminer.Volumes)
	}
	php, err := os.ReadFile("compose/adminer-login.php")
	if err != nil || !strings.Contains(string(php), `'driver' => 'pgsql'`) {
		t.Errorf("compose/adminer-login.php does not preselect pgsql (%v)", err)
	}

	// Healthchecks: the replicas on /readyz, receive on its /healthz.
	for _, name := range []string{"chronos-1", "chronos-2", "receive"} {
		hc := svc(name).HealthCheck
		want := "/readyz"
		if name == "receive" {
			want = ":9000/healthz"
		}
		if hc == nil || hc.Disable || !strings.Contains(strings.Join(hc.Test, " "), want) {
			t.Errorf("%s healthcheck %+v: want one probing %s", name, hc, want)
		}
	}

	// The replicas get longer to stop than air gives chronos before it
	// kills it (.air.toml kill_delay).
	air, err := os.ReadFile(repo(".air.toml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*kill_delay\s*=\s*"([^"]+)"`).FindSubmatch(air)
	if m == nil {
		t.Fatal(".air.toml has no kill_delay")
	}
	killDelay, err := time.ParseDuration(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"chronos-1", "chronos-2"} {
		s := svc(name)
		if s.StopGracePeriod == nil || time.Duration(*s.StopGracePeriod) <= killDelay {
			t.Errorf("%s stop_grace_period %v: want longer than air's kill_delay %s", name, s.StopGracePeriod, killDelay)
		}
		if u := s.Environment["DATABASE_URL"]; u == nil || !strings.Contains(*u, "@postgres:5432/") {
			t.Errorf("%s: DATABASE_URL must reach postgres:5432 on the compose network", name)
		}
	}

	// Everything that tells a user how to reach the compose Postgres from
	// the host uses the published port.
	for _, f := range []string{"README.md", "scripts/testdb.sh", "compose.yaml"} {
		b, err := os.ReadFile(repo(f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "chronos:chronos@localhost:"+hostPort) && !strings.Contains(string(b), "chronos:chronos@127.0.0.1:"+hostPort) && f != "compose.yaml" {
			t.Errorf("%s never names the compose Postgres at port %s", f, hostPort)
		}
		for _, stale := range []string{"chronos:chronos@localhost:5432", "chronos:chronos@127.0.0.1:5432"} {
			if strings.Contains(string(b), stale) {
				t.Errorf("%s still names the compose Postgres as %s", f, stale)
			}
		}
	}
}
