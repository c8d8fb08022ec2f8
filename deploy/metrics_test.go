package deploy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/chronoshq/chronos/sql/sqltest"
)

// prometheusSeries are names Prometheus itself gives every target, which
// no exporter serves.
var prometheusSeries = []string{"up", "scrape_duration_seconds", "scrape_samples_scraped"}

// targetLabels are labels Prometheus attaches to every scraped series.
var targetLabels = []string{"job", "instance"}

// family is what a real scrape says about one metric family.
type family struct {
	typ    string
	labels map[string]bool
	value  float64 // of the first sample of a gauge, counter or untyped family
}

var (
	scrapeOnce   sync.Once
	scrapedFams  map[string]family
	scrapeErrMsg string
)

// exported starts a real `chronos serve` on a fresh database, waits until
// its leader has computed the queue figures and it has served an API
// request, and returns the metric families its /metrics exposes. One
// server serves every test of the process.
func exported(t *testing.T) map[string]family {
	t.Helper()
	scrapeOnce.Do(func() {
		fams, err := scrapeServe(t)
		if err != nil {
			scrapeErrMsg = err.Error()
		}
		scrapedFams = fams
	})
	if scrapeErrMsg != "" {
		t.Fatal(scrapeErrMsg)
	}
	return scrapedFams
}

type scrapeError string

func (e scrapeError) Error() string { return string(e) }

func scrapeServe(t *testing.T) (map[string]family, error) {
	bin, err := buildBinary()
	if err != nil {
		return nil, err
	}
	dsn := sqltest.NewURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dsn, "HTTP_ADDR=127.0.0.1:0", "API_KEYS=k",
		"LOG_FORMAT=json", "INSTANCE_ID=deploy-test", "SHUTDOWN_TIMEOUT=5s")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}()
	addr := make(chan string, 1)
	logs := &strings.Builder{}
	var logMu sync.Mutex
	go func() {
		re := regexp.MustCompile(`"msg":"chronos started".*"addr":"([^"]+)"`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logMu.Lock()
			logs.WriteString(sc.Text() + "\n")
			logMu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case <-ctx.Done():
		logMu.Lock()
		defer logMu.Unlock()
		return nil, scrapeError("chronos serve did not start:\n" + logs.String())
	}
	// One API request, so the per-route families have samples.
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/jobs", nil)
	req.Header.Set("Authorization", "Bearer k")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	for {
		fams, body, err := scrape(ctx, base)
		if err == nil && fams["chronos_queue_runs"].labels != nil {
			return fams, nil
		}
		select {
		case <-ctx.Done():
			return nil, scrapeError("chronos serve never exported chronos_queue_runs:\n" + body)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func scrape(ctx context.Context, base string) (map[string]family, string, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	parsed, err := p.TextToMetricFamilies(strings.NewReader(string(b)))
	if err != nil {
		return nil, string(b), err
	}
	fams := map[string]family{}
	for name, mf := range parsed {
		f := family{typ: strings.ToLower(mf.GetType().String()), labels: map[string]bool{}}
		for i, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				f.labels[l.GetName()] = true
			}
			if i == 0 {
				f.value = m.GetGauge().GetValue() + m.GetCounter().GetValue() + m.GetUntyped().GetValue()
			}
		}
		fams[name] = f
	}
	return fams, string(b), nil
}

// grafanaVars stand in for Grafana's built-in variables, which PromQL does
// not know; $job and friends sit inside label values and parse as they are.
var grafanaVars = strings.NewReplacer("$__rate_interval", "1m", "$__interval", "1m", "$__range", "1h")

// selector is one series selector of a query.
type selector struct {
	name   string
	labels []string
}

// selectors parses a PromQL expression and returns its series selectors.
func selectors(t *testing.T, where, expr string) []selector {
	t.Helper()
	p := parser.NewParser(parser.Options{})
	e, err := p.ParseExpr(grafanaVars.Replace(expr))
	if err != nil {
		t.Fatalf("%s: %q does not parse: %v", where, expr, err)
	}
	var out []selector
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		s := selector{name: vs.Name}
		for _, m := range vs.LabelMatchers {
			if m.Name == model.MetricNameLabel {
				s.name = m.Value
				continue
			}
			s.labels = append(s.labels, m.Name)
		}
		if s.name == "" {
			t.Fatalf("%s: %q selects series without naming a metric", where, expr)
		}
		out = append(out, s)
		return nil
	})
	return out
}

// checkSelector fails unless the server exports the metric and labels.
func checkSelector(t *testing.T, fams map[string]family, where string, s selector) {
	t.Helper()
	if slices.Contains(prometheusSeries, s.name) {
		return
	}
	f, ok := fams[s.name]
	if !ok {
		// A histogram's series: name_bucket, name_sum, name_count.
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, cut := strings.CutSuffix(s.name, suffix); cut {
				if hf, found := fams[base]; found && (hf.typ == "histogram" || hf.typ == "summary") {
					f, ok = hf, true
					if suffix == "_bucket" {
						f.labels = mapWith(f.labels, "le")
					}
				}
			}
		}
	}
	if !ok {
		t.Errorf("%s: metric %s is not exported by chronos serve", where, s.name)
		return
	}
	for _, l := range s.labels {
		if !f.labels[l] && !slices.Contains(targetLabels, l) {
			t.Errorf("%s: metric %s has no label %q (it has %v)", where, s.name, l, keys(f.labels))
		}
	}
}

func mapWith(m map[string]bool, k string) map[string]bool {
	out := map[string]bool{k: true}
	for l := range m {
		out[l] = true
	}
	return out
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	Title      string `json:"title"`
	UID        string `json:"uid"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID      int    `json:"id"`
		Title   string `json:"title"`
		Type    string `json:"type"`
		GridPos struct {
			X, Y, W, H int
		} `json:"gridPos"`
		Targets []struct {
			Expr  string `json:"expr"`
			RefID string `json:"refId"`
		} `json:"targets"`
	} `json:"panels"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile("grafana/chronos.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana/chronos.json: %v", err)
	}
	return d
}

// TestDashboard: the dashboard is JSON Grafana can import, it has the
// panels the issue asks for, and its queries name only metrics and labels
// that a real chronos serve exports.
func TestDashboard(t *testing.T) {
	d := loadDashboard(t)
	if d.UID == "" || d.Title == "" || len(d.Panels) == 0 {
		t.Fatalf("dashboard without uid, title or panels: %+v", d)
	}
	fams := exported(t)
	ids := map[int]bool{}
	var titles []string
	for _, p := range d.Panels {
		where := "panel " + p.Title
		if ids[p.ID] {
			t.Errorf("%s: duplicate panel id %d", where, p.ID)
		}
		ids[p.ID] = true
		titles = append(titles, p.Title)
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("%s: bad gridPos %+v", where, p.GridPos)
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s: no queries", where)
		}
		for _, q := range p.Targets {
			for _, s := range selectors(t, where, q.Expr) {
				checkSelector(t, fams, where, s)
			}
		}
	}
	for _, v := range d.Templating.List {
		if m := regexp.MustCompile(`label_values\((\w+)`).FindStringSubmatch(v.Definition); m != nil {
			checkSelector(t, fams, "variable "+v.Name, selector{name: m[1]})
		}
	}
	for _, want := range []string{"Throughput by outcome", "Schedule lag", "Failures", "Queue depth", "Oldest pending", "Who leads"} {
		if !slices.Contains(titles, want) {
			t.Errorf("dashboard has no %q panel (has %q)", want, titles)
		}
	}
}
