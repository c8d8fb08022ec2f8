package sql

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/chronoshq/chronos"
)

// labelsArg sends a job's labels as a JSON object (never null).
func labelsArg(j *chronos.Job) any {
	if j.Labels == nil {
		return map[string]string{}
	}
	return j.Labels
}

// where appends the conditions of the search filters (name prefix,
// substring, labels) on the jobs table to args, each " AND ..." backed by
// an index of migration 009.
func (f *JobFilter) where(args *[]any) string {
	var b strings.Builder
	add := func(cond string, vals ...any) {
		idx := make([]any, len(vals))
		for i, v := range vals {
			*args = append(*args, v)
			idx[i] = len(*args)
		}
		b.WriteString(" AND ")
		fmt.Fprintf(&b, cond, idx...)
	}
	if f.NamePrefix != "" {
		// Bytewise range on jobs_name_key (text_pattern_ops), which a
		// prepared statement's generic plan can use, unlike LIKE $n; the
		// left() test makes it exact. U+10FFFF sorts after every character
		// but itself.
		add("name ~>=~ $%d AND name ~<~ $%d AND left(name, length($%[1]d)) = $%[1]d",
			f.NamePrefix, f.NamePrefix+"\U0010FFFF")
	}
	if f.Q != "" {
		add("(name ILIKE $%d OR description ILIKE $%[1]d)", "%"+likeEscape(f.Q)+"%")
	}
	if len(f.Labels) > 0 {
		sel, _ := json.Marshal(f.Labels) // a map of strings always marshals
		add("labels @> $%d::jsonb", string(sel))
	}
	return b.String()
}

// likeEscape quotes LIKE's wildcards and its escape character.
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}
