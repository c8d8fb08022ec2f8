package ui

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"html/template"
	"io/fs"
	"math"
	nethttp "net/http"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chronoshq/chronos"
)

// view is what every page template gets: the page's own data in D.
type view struct {
	Title string
	Nav   string // which tab is current
	S     *session
	Flash string
	Now   time.Time
	D     any
}

// parsePages parses each page template with the shared layout and
// partials. A template that does not parse is a bug caught by any test.
func parsePages() map[string]*template.Template {
	base := template.Must(template.New("base").Funcs(funcs).ParseFS(assets, "templates/_*.html"))
	pages, err := fs.Glob(assets, "templates/[a-z]*.html")
	if err != nil {
		panic(err)
	}
	out := map[string]*template.Template{}
	for _, p := range pages {
		name := path.Base(p)
		name = name[:len(name)-len(".html")]
		out[name] = template.Must(template.Must(base.Clone()).ParseFS(assets, p))
	}
	return out
}

// render writes a page with status code. The page is rendered to a buffer
// first, so a template error is a clean 500, not half a page.
func (c *Console) render(w nethttp.ResponseWriter, r *nethttp.Request, s *session, code int, page, title string, d any) {
	c.renderTemplate(w, s, code, page, "layout", view{Title: title, Nav: page, S: s, Flash: flashOf(r), Now: time.Now(), D: d})
}

// renderTemplate executes one named template of a page.
func (c *Console) renderTemplate(w nethttp.ResponseWriter, s *session, code int, page, name string, data any) {
	t, ok := c.pages[page]
	var buf bytes.Buffer
	if !ok {
		c.log.Error("console: no such page template", "page", page)
		nethttp.Error(w, "internal error", nethttp.StatusInternalServerError)
		return
	}
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		c.log.Error("console: render", "page", page, "error", err.Error())
		nethttp.Error(w, "internal error", nethttp.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// fail answers with an error page.
func (c *Console) fail(w nethttp.ResponseWriter, r *nethttp.Request, s *session, code int, msg string) {
	c.render(w, r, s, code, "error", nethttp.StatusText(code), map[string]any{"Code": code, "Message": msg})
}

// failErr answers with the error page an application error calls for: a
// client's mistake is its 4xx and message, anything else a logged 500.
func (c *Console) failErr(w nethttp.ResponseWriter, r *nethttp.Request, s *session, err error) {
	code := statusOf(err)
	msg := chronos.ErrorMessage(err)
	if code == nethttp.StatusInternalServerError {
		c.log.Error("console: request failed", "path", r.URL.Path, "error", err.Error())
		msg = "Something went wrong on the server; the log has the details."
	}
	c.fail(w, r, s, code, msg)
}

// statusOf maps an application error code to an HTTP status.
func statusOf(err error) int {
	switch chronos.ErrorCode(err) {
	case chronos.EINVALID:
		return nethttp.StatusBadRequest
	case chronos.ENOTFOUND:
		return nethttp.StatusNotFound
	case chronos.ECONFLICT:
		return nethttp.StatusConflict
	case chronos.EFORBIDDEN:
		return nethttp.StatusForbidden
	case chronos.EUNAUTHORIZED:
		return nethttp.StatusUnauthorized
	}
	return nethttp.StatusInternalServerError
}

// flashes are the only messages a redirect can ask a page to show: a
// code, never text from the request, so a link cannot put words on the
// page.
var flashes = map[string]string{
	"paused":           "Paused.",
	"resumed":          "Resumed.",
	"triggered":        "Triggered: a run is on its way.",
	"created":          "Job created.",
	"saved":            "Saved.",
	"deleted":          "Job deleted.",
	"backfilled":       "Backfilled: the runs are on their way, oldest first.",
	"redriven":         "Redriven: a new run is on its way.",
	"secrets-deleted":  "The job's own signing secrets stopped signing; the cluster's secret signs its deliveries.",
	"calendar-created": "Calendar created.",
	"calendar-saved":   "Calendar saved: the jobs naming it follow its new dates.",
	"calendar-deleted": "Calendar deleted.",
}

func flashOf(r *nethttp.Request) string {
	q := r.URL.Query()
	if q.Get("done") == "redrove" {
		return redroveFlash(q)
	}
	return flashes[q.Get("done")]
}

// problems lists an EINVALID's fields as "field: problem", sorted, or its
// message when it names none.
func problems(err error) []string {
	var e *chronos.Error
	if !errors.As(err, &e) {
		return []string{chronos.ErrorMessage(err)}
	}
	if len(e.Fields) == 0 {
		return []string{e.Message}
	}
	out := make([]string, 0, len(e.Fields))
	for k, v := range e.Fields {
		out = append(out, k+": "+v)
	}
	sort.Strings(out)
	return out
}

var funcs = template.FuncMap{
	"rel":    relTime,
	"inzone": inZone,
	"utc":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
	"iso":    func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"deref": func(p any) any {
		switch v := p.(type) {
		case *string:
			if v != nil {
				return *v
			}
		case *int:
			if v != nil {
				return *v
			}
		case *int64:
			if v != nil {
				return *v
			}
		case *time.Time:
			if v != nil {
				return *v
			}
		}
		return ""
	},
	"ms": func(p *int64) string {
		if p == nil {
			return "–"
		}
		return strconv.FormatInt(*p, 10) + " ms"
	},
	"dur":     func(d time.Duration) string { return roundDur(d) },
	"seq":     func(n int) []int { return make([]int, n) },
	"add":     func(a, b int) int { return a + b },
	"strip":   strip,
	"isutc":   isUTC,
	"outcome": outcome,
	"plural": func(n int, one, many string) string {
		if n == 1 {
			return one
		}
		return many
	},
}

// isUTC reports whether a zone name is UTC under another name, so a page
// does not show the same time twice, once "in UTC" and once "UTC".
func isUTC(zone string) bool {
	switch zone {
	case "", "UTC", "Etc/UTC", "Etc/UCT", "UCT", "Universal", "Etc/Universal", "Zulu", "Etc/Zulu", "GMT", "Etc/GMT", "GMT0", "Etc/GMT0", "Greenwich", "Etc/Greenwich":
		return true
	}
	return false
}

// outcome is a run's or attempt's last result in words: the HTTP status
// and the error, without saying "HTTP 500" twice when the error already
// starts with it ("HTTP 500 Internal Server Error").
func outcome(code *int, msg *string) string {
	var c, m string
	if code != nil {
		c = "HTTP " + strconv.Itoa(*code)
	}
	if msg != nil {
		m = *msg
	}
	switch {
	case c == "" && m == "":
		return "–"
	case m == "":
		return c
	case c == "" || strings.HasPrefix(m, c):
		return m
	}
	return c + " · " + m
}

// strip is a job's recent outcomes, newest first: a dot linking to each
// run. It is built here, not in a template, because the job list holds
// ten a row and html/template's reflection would cost more than the rest
// of the page; every value in it is an integer or escaped.
func strip(runs []*chronos.Run) template.HTML {
	var b strings.Builder
	b.WriteString(`<span class="strip" aria-label="recent outcomes, newest first">`)
	for _, r := range runs {
		id, st := strconv.FormatInt(r.ID, 10), html.EscapeString(string(r.Status))
		b.WriteString(`<a class="dot st-` + st + `" href="/ui/runs/` + id + `" title="run ` + id + `: ` + st + `"></a>`)
	}
	b.WriteString(`</span>`)
	return template.HTML(b.String())
}

// zoneCache holds the time zones pages show times in: time.LoadLocation
// reads the zone file on every call. Only valid names are stored, so it is
// bounded by the zone database.
var zoneCache sync.Map // name → *time.Location

func zoneOf(name string) *time.Location {
	if l, ok := zoneCache.Load(name); ok {
		return l.(*time.Location)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC
	}
	zoneCache.Store(name, loc)
	return loc
}

// timeArg is a template function's time argument, a time.Time or a
// *time.Time; false for nil or anything else (shown as "–").
func timeArg(t any) (time.Time, bool) {
	switch v := t.(type) {
	case time.Time:
		return v, true
	case *time.Time:
		if v != nil {
			return *v, true
		}
	}
	return time.Time{}, false
}

// relTime says when t is from now, in the largest unit that fits: "in 3m",
// "2h ago".
func relTime(t any, now time.Time) string {
	tt, ok := timeArg(t)
	if !ok {
		return "–"
	}
	d := tt.Sub(now)
	if d >= 0 {
		return "in " + roundDur(d)
	}
	return roundDur(-d) + " ago"
}

func roundDur(d time.Duration) string {
	switch {
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s"
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return strconv.Itoa(int(math.Round(d.Hours()/24))) + "d"
}

// inZone shows t in the named time zone, with the zone's abbreviation.
func inZone(t any, zone string) string {
	tt, ok := timeArg(t)
	if !ok {
		return "–"
	}
	return tt.In(zoneOf(zone)).Format("2006-01-02 15:04:05 MST")
}
