package http

import (
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestSeparateMetrics: with SeparateMetrics the API no longer answers
// /metrics (a 404 without a key), and MetricsHandler serves them.
func TestSeparateMetrics(t *testing.T) {
	t.Parallel()
	e := newEnvDB(t, nil, func(c *Config) { c.SeparateMetrics = true })
	wantStatus(t, e.doKey("GET", "/metrics", nil, ""), nethttp.StatusNotFound)
	w := httptest.NewRecorder()
	e.srv.MetricsHandler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	if w.Code != 200 || !strings.Contains(w.Body.String(), "go_goroutines") {
		t.Fatalf("metrics handler: %d %.200s", w.Code, w.Body.String())
	}
	wantStatus(t, newEnvDB(t, nil).doKey("GET", "/metrics", nil, ""), nethttp.StatusOK)
}
