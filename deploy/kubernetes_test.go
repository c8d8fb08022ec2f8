package deploy_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// shutdownSlack is what `chronos serve` allows itself past SHUTDOWN_TIMEOUT
// (cmd/chronos/serve.go).
const shutdownSlack = 10 * time.Second

// manifests decodes every document of deploy/kubernetes/*.yaml strictly
// (unknown or duplicate fields are errors) into the Kubernetes API types.
// kustomization.yaml, which is kustomize's and not the API's, is returned
// apart.
func manifests(t *testing.T) (objs []runtime.Object, kustomization []byte) {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{appsv1.AddToScheme, corev1.AddToScheme, policyv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	dec := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme, json.SerializerOptions{Yaml: true, Strict: true})
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in deploy/kubernetes (%v)", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(f) == "kustomization.yaml" {
			kustomization = b
			continue
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(bytes.TrimSpace(stripComments(doc))) == 0 {
				continue
			}
			obj, gvk, err := dec.Decode(doc, nil, nil)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			t.Logf("%s: %s %s", f, gvk.Kind, obj.(interface{ GetName() string }).GetName())
			objs = append(objs, obj)
		}
	}
	return objs, kustomization
}

// object is the last object of type T in objs (the zero T when none).
func object[T runtime.Object](objs []runtime.Object) T {
	var found T
	for _, o := range objs {
		if v, ok := o.(T); ok {
			found = v
		}
	}
	return found
}

func TestKubernetesManifests(t *testing.T) {
	objs, kust := manifests(t)
	var (
		dep    *appsv1.Deployment
		svc    *corev1.Service
		pdb    *policyv1.PodDisruptionBudget
		secret *corev1.Secret
	)
	for _, o := range objs {
		switch v := o.(type) {
		case *appsv1.Deployment:
			dep = v
		case *corev1.Service:
			svc = v
		case *policyv1.PodDisruptionBudget:
			pdb = v
		case *corev1.Secret:
			secret = v
		default:
			t.Errorf("unexpected object %T", o)
		}
	}
	if dep == nil || svc == nil || pdb == nil || secret == nil {
		t.Fatalf("want a Deployment, a Service, a PodDisruptionBudget and a Secret; got %d objects", len(objs))
	}

	// The Deployment.
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2 {
		t.Errorf("replicas %v, want 2", dep.Spec.Replicas)
	}
	pod := dep.Spec.Template
	if !selects(dep.Spec.Selector.MatchLabels, pod.Labels) {
		t.Errorf("deployment selector %v does not select its pods %v", dep.Spec.Selector.MatchLabels, pod.Labels)
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("readiness probe %+v, want GET /readyz", c.ReadinessProbe)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("liveness probe %+v, want GET /healthz", c.LivenessProbe)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	shutdown := 25 * time.Second // the default
	if e, ok := env["SHUTDOWN_TIMEOUT"]; ok {
		d, err := time.ParseDuration(e.Value)
		if err != nil {
			t.Fatalf("SHUTDOWN_TIMEOUT %q: %v", e.Value, err)
		}
		shutdown = d
	}
	var preStop time.Duration
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
		preStop = time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	}
	grace := time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	if need := preStop + shutdown + shutdownSlack; grace <= need {
		t.Errorf("terminationGracePeriodSeconds %s: must be above preStop %s + SHUTDOWN_TIMEOUT %s + serve's slack %s", grace, preStop, shutdown, shutdownSlack)
	}
	// Every secret the pod reads is in the Secret.
	for _, name := range []string{"DATABASE_URL", "API_KEYS"} {
		e, ok := env[name]
		if !ok || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			t.Errorf("%s does not come from a Secret", name)
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		if ref.Name != secret.Name {
			t.Errorf("%s comes from Secret %q, not %q", name, ref.Name, secret.Name)
		}
		if _, ok := secret.StringData[ref.Key]; !ok {
			t.Errorf("%s: Secret %s has no key %q", name, secret.Name, ref.Key)
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			if _, ok := secret.StringData[e.ValueFrom.SecretKeyRef.Key]; !ok {
				t.Errorf("%s: Secret %s has no key %q", e.Name, secret.Name, e.ValueFrom.SecretKeyRef.Key)
			}
		}
	}
	// Resources: requested memory covers a real idle instance's RSS.
	req, ok := c.Resources.Requests[corev1.ResourceMemory]
	if !ok {
		t.Fatal("no memory request")
	}
	rss := exported(t)["process_resident_memory_bytes"].value
	if rss <= 0 {
		t.Fatal("chronos serve exported no process_resident_memory_bytes")
	}
	t.Logf("idle RSS of chronos serve: %.1f MiB; memory request %s", rss/(1<<20), req.String())
	if float64(req.Value()) < rss {
		t.Errorf("memory request %s is below the measured idle RSS %.1f MiB", req.String(), rss/(1<<20))
	}
	if limit, ok := c.Resources.Limits[corev1.ResourceMemory]; ok && limit.Cmp(req) < 0 {
		t.Errorf("memory limit %s below the request %s", limit.String(), req.String())
	}
	if _, ok := c.Resources.Requests[corev1.ResourceCPU]; !ok {
		t.Error("no cpu request")
	}
	// Runs as the image's non-root user.
	sc := pod.Spec.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Error("pod does not require a non-root user")
	}
	if c.SecurityContext == nil || c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation {
		t.Error("container allows privilege escalation")
	}
	port := ""
	for _, p := range c.Ports {
		if p.ContainerPort == 8080 {
			port = p.Name
		}
	}
	if port == "" {
		t.Error("container does not expose 8080")
	}

	// The Service reaches the pods' HTTP port.
	if !selects(svc.Spec.Selector, pod.Labels) {
		t.Errorf("service selector %v does not select the pods %v", svc.Spec.Selector, pod.Labels)
	}
	for _, p := range svc.Spec.Ports {
		if p.TargetPort.String() != port && p.TargetPort.IntValue() != 8080 {
			t.Errorf("service port %s targets %s, not the container's %q", p.Name, p.TargetPort.String(), port)
		}
	}

	// The budget keeps one instance through voluntary disruptions.
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() < 1 {
		t.Errorf("PodDisruptionBudget minAvailable %v, want at least 1", pdb.Spec.MinAvailable)
	}
	if pdb.Spec.Selector == nil || !selects(pdb.Spec.Selector.MatchLabels, pod.Labels) {
		t.Errorf("PodDisruptionBudget does not select the pods")
	}
	if keep := pdb.Spec.MinAvailable.IntValue(); keep >= int(*dep.Spec.Replicas) {
		t.Errorf("PodDisruptionBudget minAvailable %d blocks every drain with %d replicas", keep, *dep.Spec.Replicas)
	}

	// kustomization.yaml lists every manifest, and only those.
	var k struct {
		APIVersion string           `json:"apiVersion"`
		Kind       string           `json:"kind"`
		Labels     []map[string]any `json:"labels"`
		Resources  []string         `json:"resources"`
	}
	if err := yaml.UnmarshalStrict(kust, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	files, _ := filepath.Glob("kubernetes/*.yaml")
	var want []string
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" {
			want = append(want, b)
		}
	}
	got := slices.Clone(k.Resources)
	sort.Strings(got)
	if k.Kind != "Kustomization" || !slices.Equal(got, want) {
		t.Errorf("kustomization.yaml: kind %q, resources %v; want Kustomization of %v", k.Kind, got, want)
	}
}

// selects reports whether every label of sel is in labels.
func selects(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// stripComments drops YAML comment lines, so a document of comments alone
// counts as empty.
func stripComments(doc []byte) []byte {
	var out []string
	for _, l := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			out = append(out, l)
		}
	}
	return []byte(strings.Join(out, "\n"))
}
