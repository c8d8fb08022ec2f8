package ui

import (
	"fmt"
	nethttp "net/http"
	"net/url"
	"strconv"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// redriveRuns is POST /ui/runs/redrive, from the dead-letter list:
//
//   - action=selected redrives the runs whose ids the form sends (at most
//     sql.MaxRedriveBatch), each as POST /v1/runs/{id}/redrive does
//     (sql.Redrive): a run that is no longer dead, is already being
//     redriven, or is gone is skipped and counted, never redriven twice.
//   - action=all redrives the dead runs that match the list's filters, sent
//     back as fields, as POST /v1/runs/redrive does (sql.RedriveAll): the
//     oldest first, at most sql.MaxRedriveBatch per press, each never
//     redriven before; the notice says when more remain.
//
// The browser goes back to the list, whose notice counts what happened.
func (c *Console) redriveRuns(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	back := localPath(r.PostForm.Get("back"), runsListPath)
	var (
		done    int
		skipped int
		more    bool
	)
	switch r.PostForm.Get("action") {
	case "selected":
		ids, msg := selectedIDs(r.PostForm["id"], sql.MaxRedriveBatch)
		if msg != "" {
			c.fail(w, r, s, nethttp.StatusBadRequest, msg)
			return
		}
		for _, id := range ids {
			run, err := c.db.Redrive(r.Context(), id)
			switch chronos.ErrorCode(err) {
			case "":
				c.announce(run)
				done++
			case chronos.ECONFLICT, chronos.ENOTFOUND:
				skipped++
			default:
				c.failErr(w, r, s, err)
				return
			}
		}
	case "all":
		f, err := parseRunFilter(r.PostForm)
		var runs []*chronos.Run
		if err == nil {
			runs, more, err = c.db.RedriveAll(r.Context(), f.Query)
		}
		if err != nil {
			c.failErr(w, r, s, err)
			return
		}
		for _, run := range runs {
			c.announce(run)
		}
		done = len(runs)
	default:
		c.fail(w, r, s, nethttp.StatusBadRequest, "Choose to redrive the selected runs or all that match.")
		return
	}
	c.log.Info("console: runs redriven", "action", r.PostForm.Get("action"), "count", done, "skipped", skipped, "more", more, "key", s.Name)
	u, _ := url.Parse(back)
	q := u.Query()
	q.Del("cursor") // the new runs are not on the list; its first page has moved on
	q.Set("done", "redrove")
	q.Set("n", strconv.Itoa(done))
	if skipped > 0 {
		q.Set("skipped", strconv.Itoa(skipped))
	}
	if more {
		q.Set("more", "1")
	}
	u.RawQuery = q.Encode()
	nethttp.Redirect(w, r, u.String(), nethttp.StatusSeeOther)
}

// selectedIDs parses the ids of a bulk action: at least one, at most max,
// each a positive integer. It returns a message for the person otherwise.
func selectedIDs(vals []string, max int) ([]int64, string) {
	if len(vals) == 0 {
		return nil, "Select the runs to redrive first."
	}
	if len(vals) > max {
		return nil, fmt.Sprintf("Select at most %d runs at once.", max)
	}
	ids := make([]int64, 0, len(vals))
	for _, v := range vals {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id < 1 {
			return nil, "A selected run id is not a positive integer."
		}
		ids = append(ids, id)
	}
	return ids, ""
}

// redroveFlash is the notice after a redrive from the list. It is built
// from numbers only (n, skipped, more), so a link cannot put words on the
// page.
func redroveFlash(q url.Values) string {
	n, _ := strconv.Atoi(q.Get("n"))
	skipped, _ := strconv.Atoi(q.Get("skipped"))
	msg := fmt.Sprintf("Redriven %s: new runs are on their way.", plural(max(n, 0), "dead run", "dead runs"))
	if n == 0 {
		msg = "Nothing was redriven."
	}
	if skipped > 0 {
		msg += fmt.Sprintf(" Skipped %s: no longer dead, already being redriven, or gone.", plural(skipped, "run", "runs"))
	}
	if q.Get("more") == "1" {
		msg += fmt.Sprintf(" More dead runs match: redrive all again for the next %d.", sql.MaxRedriveBatch)
	}
	return msg
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
