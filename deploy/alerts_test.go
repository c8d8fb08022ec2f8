package deploy_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// TestAlertRules parses the rules with Prometheus's own parser, strictly
// (an unknown field is an error, as with promtool), checks that the
// alerts the issue asks for are there with their thresholds, and that
// every metric they name is exported by a real chronos serve.
func TestAlertRules(t *testing.T) {
	groups, errs := rulefmt.ParseFile("prometheus/alerts.yaml", false, model.UTF8Validation,
		parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatalf("prometheus/alerts.yaml: %v", errs)
	}
	fams := exported(t)
	type alert struct {
		expr string
		for_ time.Duration
	}
	alerts := map[string]alert{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			where := "alert " + r.Alert
			if _, dup := alerts[r.Alert]; dup {
				t.Errorf("%s: defined twice", where)
			}
			alerts[r.Alert] = alert{expr: r.Expr, for_: time.Duration(r.For)}
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s: needs a severity label and summary and description annotations", where)
			}
			for _, s := range selectors(t, where, r.Expr) {
				checkSelector(t, fams, where, s)
			}
		}
	}
	want := []struct {
		name     string
		for_     time.Duration
		contains []string
	}{
		{"ChronosNoLeader", 30 * time.Second, []string{"chronos_leader", "< 1"}},
		{"ChronosScheduleLagHigh", 5 * time.Minute, []string{"histogram_quantile(0.99", "chronos_schedule_lag_seconds_bucket", "> 1"}},
		{"ChronosDeadRunsRising", 0, []string{`chronos_runs_total{status="dead"}`, "> 0"}},
		{"ChronosOldestPendingRun", time.Minute, []string{"chronos_queue_oldest_pending_seconds", "> 60"}},
		{"ChronosInstanceDown", time.Minute, []string{"up{", "== 0"}},
	}
	for _, w := range want {
		a, ok := alerts[w.name]
		if !ok {
			t.Errorf("no alert %s", w.name)
			continue
		}
		if a.for_ != w.for_ {
			t.Errorf("alert %s: for %s, want %s", w.name, a.for_, w.for_)
		}
		for _, c := range w.contains {
			if !strings.Contains(a.expr, c) {
				t.Errorf("alert %s: expr %q lacks %q", w.name, a.expr, c)
			}
		}
	}
}
