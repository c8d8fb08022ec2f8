package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Named objects in manifests: an item whose "kind" is one of objectKinds
// (Calendar, Limit) is not a job but an object the server keeps under a
// name, written whole by a PUT (PUT /v1/calendars/{name},
// PUT /v1/limits/{key}). Every kind goes through the same code: checked
// with the jobs (one bad item refuses the lot), compared with the
// server's field by field, created and replaced before the jobs (which
// name them) and, with --prune, the server's objects of a kind the files
// do not list deleted after the jobs, but only when the files hold at
// least one object of that kind: a manifest of jobs alone leaves the
// calendars and limits as they are. One a job still names cannot be
// deleted (the server's 409).

// ObjectDoc is one named object of a manifest: a calendar or a limit.
type ObjectDoc struct {
	Kind   string // as the manifest gives it: Calendar, Limit
	Name   string // its name, or a limit's key
	Source string // file, and position in it
	Body   any    // the body of its PUT: a CalendarSpec or a LimitSettings
}

// ObjectStep is one write of a named object in a plan.
type ObjectStep struct {
	Kind    string   `json:"kind"`
	Action  Action   `json:"action"`
	Name    string   `json:"name"`
	Changes []Change `json:"changes,omitempty"` // the fields of its PUT body that differ
	doc     *ObjectDoc
}

// Tally counts what a plan does, or did, to the objects of one kind.
type Tally struct {
	Created   int `json:"created"`
	Updated   int `json:"updated"`
	Deleted   int `json:"deleted"`
	Unchanged int `json:"unchanged"`
}

// add counts one step of action a.
func (t *Tally) add(a Action) {
	switch a {
	case ActionCreate:
		t.Created++
	case ActionUpdate:
		t.Updated++
	case ActionDelete:
		t.Deleted++
	}
}

// objectKind is what apply knows of one kind of named object. Its
// functions take and return the kind's PUT body as any; newKind builds
// them from typed ones. The client comes first, as in the method
// expressions ((*Client).DeleteLimit) they often are.
type objectKind struct {
	kind   string   // the manifest's kind: value
	noun   string   // in plan lines and errors: "calendar"
	plural string   // in summaries: "calendars"
	name   string   // the field that names one: "name", "key"
	fields []string // the other fields it may hold
	values bool     // plan lines show each changed field's values (limits), or only its name (calendars: long lists)

	// check validates one object (its fields decoded from raw) and
	// returns the body of its PUT, or problems keyed by field.
	check func(name string, raw json.RawMessage) (any, map[string]string)
	// list returns the server's objects of the kind, as PUT bodies, by name.
	list func(c *Client, ctx context.Context) (map[string]any, error)
	put  func(c *Client, ctx context.Context, name string, body any) error
	del  func(c *Client, ctx context.Context, name string) error
}

// newKind is an objectKind whose functions handle the PUT body of type B,
// from the client's own methods: list returns the server's objects (of
// type T, named and turned into bodies by bodyOf), put (answering R) and
// del write one.
func newKind[B, T, R any](k objectKind,
	check func(name string, raw json.RawMessage) (B, map[string]string),
	list func(c *Client, ctx context.Context) ([]T, error),
	bodyOf func(T) (string, B),
	put func(c *Client, ctx context.Context, name string, body B) (R, error),
	del func(c *Client, ctx context.Context, name string) error) objectKind {
	k.check = func(name string, raw json.RawMessage) (any, map[string]string) { return check(name, raw) }
	k.list = func(c *Client, ctx context.Context) (map[string]any, error) {
		objs, err := list(c, ctx)
		if err != nil {
			return nil, err
		}
		out := make(map[string]any, len(objs))
		for _, o := range objs {
			name, body := bodyOf(o)
			out[name] = body
		}
		return out, nil
	}
	k.put = func(c *Client, ctx context.Context, name string, body any) error {
		_, err := put(c, ctx, name, body.(B))
		return err
	}
	k.del = del
	return k
}

// objectKinds are the kinds a manifest may hold beside jobs, in the order
// a plan writes them (before the jobs; their deletes after).
var objectKinds = []objectKind{calendarKind, limitKind}

// KindNames are the kinds of item a manifest may hold: Job, and the
// named objects'.
func KindNames() []string {
	out := []string{"Job"}
	for _, k := range objectKinds {
		out = append(out, k.kind)
	}
	return out
}

// kindNamed is the kind of a manifest's kind: value, if it names one.
func kindNamed(kind string) (objectKind, bool) {
	i := slices.IndexFunc(objectKinds, func(k objectKind) bool { return k.kind == kind })
	if i < 0 {
		return objectKind{}, false
	}
	return objectKinds[i], true
}

// kindOf reads an item's "kind" ("" when absent or not a string).
func kindOf(raw json.RawMessage) string {
	var k struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(raw, &k)
	return k.Kind
}

// splitKinds separates the named objects from the jobs, and drops
// "kind: Job" from jobs (a job has no kind field). An item of an unknown
// kind is a problem, named by where(i), its position among items.
func splitKinds(raws []json.RawMessage, where func(i int) string) (jobs, objects []json.RawMessage, problems []string) {
	for i, raw := range raws {
		kind := kindOf(raw)
		if _, ok := kindNamed(kind); ok {
			objects = append(objects, raw)
			continue
		}
		switch kind {
		case "Job":
			var m map[string]json.RawMessage
			if json.Unmarshal(raw, &m) == nil {
				delete(m, "kind")
				raw, _ = json.Marshal(m)
			}
		case "":
		default:
			problems = append(problems, fmt.Sprintf("%s: field kind: %q is not a kind (want %s)", where(i), kind, strings.Join(KindNames(), ", ")))
			continue
		}
		jobs = append(jobs, raw)
	}
	return jobs, objects, problems
}

// checkObject checks one named object of a manifest: no unknown field, a
// name, and what the kind's check says.
func checkObject(raw json.RawMessage, where string) (*ObjectDoc, []string) {
	k, _ := kindNamed(kindOf(raw))
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, []string{fmt.Sprintf("%s: a %s must be a mapping of fields", where, k.noun)}
	}
	var name string
	_ = json.Unmarshal(fields[k.name], &name)
	if name != "" {
		where = fmt.Sprintf("%s (%s)", where, name)
	}
	var problems []string
	for _, f := range slices.Sorted(maps.Keys(fields)) {
		if f != "kind" && f != k.name && !slices.Contains(k.fields, f) {
			problems = append(problems, fmt.Sprintf("%s: field %s: unknown field", where, f))
		}
	}
	body, bad := k.check(name, raw)
	for _, f := range slices.Sorted(maps.Keys(bad)) {
		problems = append(problems, fmt.Sprintf("%s: field %s: %s", where, f, bad[f]))
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return &ObjectDoc{Kind: k.kind, Name: name, Source: where, Body: body}, nil
}

// decodeFields decodes an object's fields into v; a field of the wrong
// type is a problem naming it, as for jobs (nil: none).
func decodeFields(raw json.RawMessage, v any, nameField string) map[string]string {
	err := json.Unmarshal(raw, v)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return map[string]string{te.Field: fmt.Sprintf("must be %s, not a JSON %s", te.Type, te.Value)}
	}
	return map[string]string{nameField: err.Error()} // raw is an object: not reached
}

// PlanObjects compares the manifest's named objects with the server's,
// kind by kind; with prune, the server's objects of a kind the manifest
// holds at least one of that it does not name are deleted. It returns the
// steps, in the order of objectKinds, and the unchanged objects by kind.
func (c *Client) PlanObjects(ctx context.Context, docs []*ObjectDoc, prune bool) ([]ObjectStep, map[string]int, error) {
	steps := []ObjectStep{}
	unchanged := map[string]int{}
	for _, k := range objectKinds {
		var mine []*ObjectDoc
		for _, d := range docs {
			if d.Kind == k.kind {
				mine = append(mine, d)
			}
		}
		if len(mine) == 0 {
			continue
		}
		existing, err := k.list(c, ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("list %s: %w", k.plural, err)
		}
		unchanged[k.kind] = 0
		named := map[string]bool{}
		for _, d := range mine {
			named[d.Name] = true
			cur, ok := existing[d.Name]
			if !ok {
				steps = append(steps, ObjectStep{Kind: k.kind, Action: ActionCreate, Name: d.Name, doc: d})
				continue
			}
			changes, err := bodyChanges(d.Body, cur)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", d.Source, err)
			}
			if len(changes) == 0 {
				unchanged[k.kind]++
				continue
			}
			steps = append(steps, ObjectStep{Kind: k.kind, Action: ActionUpdate, Name: d.Name, Changes: changes, doc: d})
		}
		if prune {
			for _, n := range slices.Sorted(maps.Keys(existing)) {
				if !named[n] {
					steps = append(steps, ObjectStep{Kind: k.kind, Action: ActionDelete, Name: n})
				}
			}
		}
	}
	return steps, unchanged, nil
}

// bodyChanges compares two PUT bodies field by field through their JSON
// forms (sameJSON: an absent field equals null and an empty list).
func bodyChanges(want, have any) ([]Change, error) {
	var w, h map[string]json.RawMessage
	for _, x := range []struct {
		v   any
		out *map[string]json.RawMessage
	}{{want, &w}, {have, &h}} {
		b, err := json.Marshal(x.v)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, x.out); err != nil {
			return nil, err
		}
	}
	keys := map[string]bool{}
	for f := range w {
		keys[f] = true
	}
	for f := range h {
		keys[f] = true
	}
	var out []Change
	for _, f := range slices.Sorted(maps.Keys(keys)) {
		if !sameJSON(w[f], h[f]) {
			out = append(out, Change{Field: f, From: h[f], To: w[f]})
		}
	}
	return out, nil
}

// applyObjects carries out the object steps of one kind of action: the
// creates and updates (deletes false), or the deletes, counting each that
// succeeded in tallies (by kind).
func (c *Client) applyObjects(ctx context.Context, steps []ObjectStep, deletes bool, tallies map[string]*Tally) error {
	var errs []string
	for _, st := range steps {
		if (st.Action == ActionDelete) != deletes {
			continue
		}
		k, _ := kindNamed(st.Kind)
		var err error
		if st.Action == ActionDelete {
			err = k.del(c, ctx, st.Name)
		} else {
			err = k.put(c, ctx, st.Name, st.doc.Body)
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s %s %s: %v", st.Action, k.noun, st.Name, err))
			continue
		}
		tallyOf(tallies, st.Kind).add(st.Action)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// tallyOf is tallies[kind], made when missing.
func tallyOf(tallies map[string]*Tally, kind string) *Tally {
	t := tallies[kind]
	if t == nil {
		t = &Tally{}
		tallies[kind] = t
	}
	return t
}

// ObjectTallies counts the plan's object steps by kind, with the
// unchanged ones: what a dry run would do. A kind the manifest holds
// none of, and the plan does not touch, is absent.
func (p *Plan) ObjectTallies() map[string]*Tally {
	out := map[string]*Tally{}
	for kind, n := range p.ObjectsUnchanged {
		tallyOf(out, kind).Unchanged = n
	}
	for _, st := range p.Objects {
		tallyOf(out, st.Kind).add(st.Action)
	}
	return out
}

// UnchangedSummary says what a plan leaves as it is: "2 job(s)", and
// "1 calendar(s)", "1 limit(s)" for the kinds the manifest lists.
func (p *Plan) UnchangedSummary() string {
	parts := []string{fmt.Sprintf("%d job(s)", p.Unchanged)}
	for _, k := range objectKinds {
		if n, ok := p.ObjectsUnchanged[k.kind]; ok {
			parts = append(parts, fmt.Sprintf("%d %s(s)", n, k.noun))
		}
	}
	return strings.Join(parts, ", ")
}

// TallyLines renders tallies, one line per kind in the order of
// objectKinds ("limits: 1 created, 0 updated, 0 deleted, 2 unchanged");
// with dryRun, in the future tense of a plan ("1 to create, ...").
func TallyLines(tallies map[string]*Tally, dryRun bool) string {
	var b strings.Builder
	for _, k := range objectKinds {
		t := tallies[k.kind]
		if t == nil {
			continue
		}
		if dryRun {
			fmt.Fprintf(&b, "%s: %d to create, %d to update, %d to delete, %d unchanged\n", k.plural, t.Created, t.Updated, t.Deleted, t.Unchanged)
		} else {
			fmt.Fprintf(&b, "%s: %d created, %d updated, %d deleted, %d unchanged\n", k.plural, t.Created, t.Updated, t.Deleted, t.Unchanged)
		}
	}
	return b.String()
}

// objectLines writes the object steps as Plan.String does jobs:
// "+ create limit sms", "~ update limit sms (rate: 100 -> 50)",
// "~ update calendar us-holidays (dates)", "- delete calendar extra".
func objectLines(b *strings.Builder, steps []ObjectStep) {
	for _, st := range steps {
		k, _ := kindNamed(st.Kind)
		switch st.Action {
		case ActionCreate:
			fmt.Fprintf(b, "+ create %s %s\n", k.noun, st.Name)
		case ActionDelete:
			fmt.Fprintf(b, "- delete %s %s\n", k.noun, st.Name)
		case ActionUpdate:
			var fs []string
			for _, ch := range st.Changes {
				if k.values {
					fs = append(fs, fmt.Sprintf("%s: %s -> %s", ch.Field, compact(ch.From), compact(ch.To)))
				} else {
					fs = append(fs, ch.Field)
				}
			}
			fmt.Fprintf(b, "~ update %s %s (%s)\n", k.noun, st.Name, strings.Join(fs, ", "))
		}
	}
}
