package http

import (
	"sort"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// TestOpenAPIMatchesRoutes fails when the router has a route the document
// lacks, or the document a route the router lacks.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	var doc struct {
		OpenAPI string                    `yaml:"openapi"`
		Paths   map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatalf("parse openapi.yaml: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi version %q", doc.OpenAPI)
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			switch method {
			case "get", "put", "post", "delete", "patch", "head", "options", "trace":
				documented[strings.ToUpper(method)+" "+path] = true
			}
		}
	}
	s := NewServer(Config{APIKeys: []string{"k"}}, nil, nil, nil, nil)
	served := map[string]bool{}
	for _, r := range s.engine.Routes() {
		parts := strings.Split(r.Path, "/")
		for i, p := range parts {
			if strings.HasPrefix(p, ":") || strings.HasPrefix(p, "*") {
				parts[i] = "{" + p[1:] + "}"
			}
		}
		served[r.Method+" "+strings.Join(parts, "/")] = true
	}
	var missing, extra []string
	for r := range served {
		if !documented[r] {
			missing = append(missing, r)
		}
	}
	for r := range documented {
		if !served[r] {
			extra = append(extra, r)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("routes missing from openapi.yaml: %v", missing)
	}
	if len(extra) > 0 {
		t.Errorf("openapi.yaml documents routes the router lacks: %v", extra)
	}
	if len(served) < 14 {
		t.Errorf("only %d routes: %v", len(served), served)
	}
}

func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	s := NewServer(Config{APIKeys: []string{"k"}}, nil, nil, nil, nil)
	e := &env{t: t, srv: s}
	w := e.doKey("GET", "/openapi.yaml", nil, "")
	wantStatus(t, w, 200)
	if w.Body.String() != string(OpenAPI) {
		t.Fatal("served document differs from the embedded one")
	}
}
