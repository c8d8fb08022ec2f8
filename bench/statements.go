package bench

import (
	"fmt"
	"sort"
	"strings"
)

// stmtClass is a short name for a statement Chronos issues, for the idle
// breakdown.
func stmtClass(q string) string {
	l := strings.ToLower(q)
	switch {
	case q == "" || strings.HasPrefix(l, "-- ping") || l == ";":
		return "ping"
	case strings.Contains(l, "pg_try_advisory_lock"):
		return "leader_trylock"
	case strings.Contains(l, "for update skip locked") && strings.Contains(l, "leased_until = now()") && strings.Contains(l, "status = 'pending'"):
		return "claim"
	case strings.Contains(l, "set status = 'running'"):
		return "start"
	case strings.Contains(l, "unnest($1::bigint[], $2::text[]"):
		return "complete"
	case strings.HasPrefix(l, "update job_runs set leased_until"):
		return "renew"
	case strings.Contains(l, "released as"):
		return "release"
	case strings.Contains(l, "min(available_at)"):
		return "next_available"
	case strings.Contains(l, "s.next_run_at <= $2"):
		return "materialize_due"
	case strings.Contains(l, "next_run_at is null"):
		return "materialize_unscheduled"
	case strings.Contains(l, "update job_schedules s set next_run_at"):
		return "materialize_advance"
	case strings.Contains(l, "leased_until <"):
		return "reap"
	case strings.HasPrefix(l, "delete from job_runs where id in"):
		return "prune"
	case l == "begin" || l == "commit" || l == "rollback" || strings.HasPrefix(l, "begin "):
		return "begin/commit"
	case strings.HasPrefix(l, "listen") || strings.HasPrefix(l, "unlisten"):
		return "listen"
	case strings.Contains(l, "pg_locks") || strings.Contains(l, "pg_stat_activity"):
		return "leader_lookup"
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
