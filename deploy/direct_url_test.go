package deploy_test

import (
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestDeployDirectURL: every way to deploy offers DATABASE_DIRECT_URL,
// the Postgres session for the LISTEN connection, the leader's lock and
// migrations when DATABASE_URL goes through a transaction pooler (issue
// 23, item 3), says when to set it, and leaves it unset where
// DATABASE_URL reaches Postgres directly: the Kubernetes Deployment reads
// it from the Secret, optionally (a Secret made by hand without the key
// still starts), the Secret holds it empty; the systemd environment file
// and compose.yaml carry it commented out.
func TestDeployDirectURL(t *testing.T) {
	objs, _ := manifests(t)
	dep, secret := object[*appsv1.Deployment](objs), object[*corev1.Secret](objs)
	if dep == nil || secret == nil {
		t.Fatal("no Deployment or no Secret")
	}
	var found bool
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		if e.Name != "DATABASE_DIRECT_URL" {
			continue
		}
		found = true
		ref := e.ValueFrom
		if ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != secret.Name {
			t.Fatalf("DATABASE_DIRECT_URL %+v: want it from Secret %s", e, secret.Name)
		}
		if ref.SecretKeyRef.Optional == nil || !*ref.SecretKeyRef.Optional {
			t.Error("DATABASE_DIRECT_URL's secretKeyRef is not optional: a Secret without the key keeps pods from starting")
		}
		if v, ok := secret.StringData[ref.SecretKeyRef.Key]; !ok || v != "" {
			t.Errorf("Secret %s key %s = %q (present %v): want it there and empty (DATABASE_URL reaches Postgres directly)", secret.Name, ref.SecretKeyRef.Key, v, ok)
		}
	}
	if !found {
		t.Error("the Deployment does not pass DATABASE_DIRECT_URL")
	}
	for _, f := range []string{"kubernetes/secret.yaml", "kubernetes/deployment.yaml"} {
		mentionsPooler(t, f)
	}

	env, err := os.ReadFile("systemd/chronos.env.example")
	if err != nil {
		t.Fatal(err)
	}
	var commented bool
	for _, line := range strings.Split(string(env), "\n") {
		if strings.HasPrefix(line, "DATABASE_DIRECT_URL=") {
			t.Errorf("systemd/chronos.env.example sets %q: the example's DATABASE_URL reaches Postgres directly", line)
		}
		if strings.HasPrefix(line, "#DATABASE_DIRECT_URL=postgres://") {
			commented = true
		}
	}
	if !commented {
		t.Error("systemd/chronos.env.example has no commented DATABASE_DIRECT_URL=postgres://... line")
	}
	mentionsPooler(t, "systemd/chronos.env.example")

	p := loadCompose(t)
	for _, name := range []string{"chronos-1", "chronos-2"} {
		s, ok := p.Services[name]
		if !ok {
			t.Fatalf("compose has no service %s", name)
		}
		if v := s.Environment["DATABASE_DIRECT_URL"]; v != nil && *v != *s.Environment["DATABASE_URL"] {
			t.Errorf("%s: DATABASE_DIRECT_URL %q differs from DATABASE_URL: compose has no pooler", name, *v)
		}
	}
	mentionsPooler(t, repo("compose.yaml"))
}

// mentionsPooler fails unless file names DATABASE_DIRECT_URL and says it
// is for a transaction pooler.
func mentionsPooler(t *testing.T, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.Contains(s, "DATABASE_DIRECT_URL") || !strings.Contains(s, "transaction") || !strings.Contains(strings.ToLower(s), "pooler") {
		t.Errorf("%s does not say when to set DATABASE_DIRECT_URL (a transaction pooler in DATABASE_URL)", file)
	}
}
