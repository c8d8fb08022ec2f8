package bench

import (
	"fmt"
	"sort"
	"strings"
)

// stmtClasses names the statements Chronos issues, for the idle breakdown.
// The first rule that matches a statement (lower-cased) names it, so the
// order matters: "claim" before "reap", which both mention leased_until. A
// rule matches when every one of all and at least one of any (when given)
// do; a pattern "^x" is a prefix, "=x" the whole statement, any other a
// substring.
var stmtClasses = []struct {
	class string
	all   []string
	any   []string
}{
	{class: "ping", any: []string{"=", "^-- ping", "=;"}},
	{class: "leader_trylock", all: []string{"pg_try_advisory_lock"}},
	{class: "claim", all: []string{"for update skip locked", "leased_until = now()", "status = 'pending'"}},
	{class: "start", all: []string{"set status = 'running'"}},
	{class: "complete", all: []string{"unnest($1::bigint[], $2::text[]"}},
	{class: "renew", all: []string{"^update job_runs set leased_until"}},
	{class: "release", all: []string{"released as"}},
	{class: "next_available", all: []string{"min(available_at)"}},
	{class: "materialize_due", all: []string{"s.next_run_at <= $2"}},
	{class: "materialize_unscheduled", all: []string{"next_run_at is null"}},
	{class: "materialize_advance", all: []string{"update job_schedules s set next_run_at"}},
	{class: "reap", all: []string{"leased_until <"}},
	{class: "prune", all: []string{"^delete from job_runs where id in"}},
	{class: "begin/commit", any: []string{"=begin", "=commit", "=rollback", "^begin "}},
	{class: "listen", any: []string{"^listen", "^unlisten"}},
	{class: "leader_lookup", any: []string{"pg_locks", "pg_stat_activity"}},
}

// stmtMatches reports whether the lower-cased statement l matches pattern
// p (see stmtClasses).
func stmtMatches(l, p string) bool {
	switch {
	case strings.HasPrefix(p, "^"):
		return strings.HasPrefix(l, p[1:])
	case strings.HasPrefix(p, "="):
		return l == p[1:]
	}
	return strings.Contains(l, p)
}

// stmtClass is a short name for a statement Chronos issues, for the idle
// breakdown: its class in stmtClasses, or its first 40 bytes.
func stmtClass(q string) string {
	l := strings.ToLower(q)
	for _, r := range stmtClasses {
		ok := len(r.any) == 0
		for _, p := range r.any {
			ok = ok || stmtMatches(l, p)
		}
		for _, p := range r.all {
			ok = ok && stmtMatches(l, p)
		}
		if ok {
			return r.class
		}
	}
	if len(q) > 40 {
		q = q[:40] + "..."
	}
	return q
}

// breakdownPer is breakdown scaled to statements per 1000 of n runs.
func breakdownPer(counts map[stmtKey]int, instance string, n int) []string {
	scaled := map[stmtKey]int{}
	for k, c := range counts {
		scaled[k] = c
	}
	out := breakdown(scaled, instance)
	for i, item := range out {
		name, num, _ := strings.Cut(item, " ")
		var c float64
		fmt.Sscan(num, &c)
		out[i] = fmt.Sprintf("%s %.0f", name, c*1000/float64(n))
	}
	return out
}

// breakdown groups counts by connection kind and statement class, most
// frequent first, as "kind/class count" items.
func breakdown(counts map[stmtKey]int, instance string) []string {
	type row struct {
		key string
		n   int
	}
	agg := map[string]int{}
	for k, n := range counts {
		kind := "pool"
		switch {
		case strings.HasSuffix(k.App, "-listener"):
			kind = "listener"
		case k.App != instance:
			kind = k.App
		}
		agg[kind+"/"+stmtClass(k.Query)] += n
	}
	var rows []row
	for k, n := range agg {
		rows = append(rows, row{k, n})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].n != rows[j].n {
			return rows[i].n > rows[j].n
		}
		return rows[i].key < rows[j].key
	})
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprintf("%s %d", r.key, r.n)
	}
	return out
}
