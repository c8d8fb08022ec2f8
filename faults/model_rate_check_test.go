package faults

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/chronoshq/chronos/internal/instant"
)

// The rate half of the limit invariant (issue 24): a key's token bucket is
// never exceeded at the target.
//
// The bucket (migration 022's chronos_limit_tokens, sql/limits_claim.go's
// limitClaimCTEs and limitTakenCTE, sql/limits.go's PutLimit) holds up to
// rate tokens and refills continuously at rate/per_seconds; every lease,
// first attempt or retry, takes one token in the claim, under the key's
// row lock, by the database's clock, before the request leaves. A PUT
// keeps the tokens left (refilled to its moment) but caps them at the new
// rate, a bucket that had no rate before (or no limit: deleted, put
// again) starts full, and a deleted limit limits nothing. So the
// claims made while one setting is in force number, over any span of
// time, at most rate + rate × span / per_seconds.
//
// The target sees arrivals, not claims: a claim comes before its request
// arrives, and no earlier than its run was created nor (unless its worker
// was frozen meanwhile) than modelRateTransit before the arrival. So the
// requests of any run of consecutive arrivals were claimed between the
// earliest such bound among them and the last arrival, and their number
// is held to what the bucket allows over that span.

// modelRateTransit bounds the time from the claim that took a request's
// token to the request's arrival at the target: the rest of the claim
// statement and its commit, the answer's way back, a claimed-ahead run's
// wait for its instant (reactor.DefaultClaimAhead, 20 ms) and its
// StartAhead write, the request's way out and the target's handler. That
// is milliseconds on an idle machine; the starting-deadline check
// (model_policy_check_test.go) allows 2 s for the same stretch on a loaded
// one, and this takes 3 s, on purpose generously: the bound only matters
// for runs created long before their request (held by their limit, or
// retried), and it loosens the check by rate × 3 s / per_seconds requests,
// which a limit not enforced under a load beyond it still exceeds within
// seconds.
const modelRateTransit = 3 * time.Second

// rateReq is a request of a key with a rate: what arrived, and the
// earliest moment the claim that took its token can have been.
type rateReq struct {
	x    mdelivery
	from time.Time
}

// rateStretch is a stretch of a key's history under one rate: every claim
// made within [from, to] took its token from one bucket of that rate,
// which held at most rate tokens when the stretch began.
type rateStretch struct {
	v        limitVersion
	from, to time.Time // to is zero for a setting still in force
}

// rateWindow is a run of consecutive arrivals of a stretch, reqs[first]
// to reqs[last]: n requests whose claims lie in [from, reqs[last]'s
// arrival], over which the bucket allows allowed.
type rateWindow struct {
	first, last, n int
	from           time.Time
	allowed        float64
}

// excess is how many requests the window has beyond what its bucket
// allows (negative: room left).
func (w rateWindow) excess() float64 { return float64(w.n) - w.allowed }

// checkRates: no key's rate is exceeded at the target. For each stretch
// of a key under one rate (rateStretches), over every run of consecutive
// arrivals of its requests, the requests number at most what the bucket
// allows from the earliest their claims can have been to the last
// arrival (rateRequests, rateStretch.allows).
//
// Left out, as checkLimits leaves them out: requests whose key is not
// certain (limitKeyOf: a PATCH may have moved their run; a deleted job's
// runs are gone), and requests of a job whose last change has no answer.
// A key counts only while its limit has a rate: deleted, or without a
// rate, it limits nothing. Leaving requests out never makes a violation.
func (s *seqRun) checkRates(d *checkData) {
	byKey := s.rateRequests(d)
	var tightest rateWindow
	stretches := 0
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		for _, st := range s.dc.rateStretches(key) {
			reqs := st.of(byKey[key])
			if len(reqs) == 0 {
				continue
			}
			stretches++
			w, pressed := st.worst(reqs)
			s.fig.rated += len(reqs)
			s.fig.atRate += pressed
			if tightest.n == 0 || w.excess() > tightest.excess() {
				tightest = w
			}
			if w.excess() > 1e-9 { // beyond rounding
				s.violate("rate-exceeded", "limit %s (%s; %s): %s", key, st.v, s.limitHistory(key), w.describe(st, reqs))
			}
		}
	}
	if stretches > 0 {
		s.t.Logf("rate check: %d requests in %d stretches under a rate, %d of them at the rate past the burst; the tightest window had %d requests of %.1f allowed",
			s.fig.rated, stretches, s.fig.atRate, tightest.n, tightest.allowed)
	}
}

// rateRequests are the requests of each key whose run's key is certain,
// in the order they arrived (d.dels is), each with the earliest moment
// its claim can have been (claimedFrom).
func (s *seqRun) rateRequests(d *checkData) map[string][]rateReq {
	byKey := map[string][]rateReq{}
	for _, x := range d.dels {
		k, ok := s.limitKeyOf(d, x)
		if !ok || s.byID[d.byID[x.Run].Job].uncertain {
			continue
		}
		byKey[k] = append(byKey[k], rateReq{x: x, from: s.claimedFrom(d, x)})
	}
	return byKey
}

// claimedFrom is the earliest moment the claim that sent x can have been:
// not before its run was created (created_at is the start of the
// transaction that inserted it, by the database's clock: modelTol for the
// clocks), and, unless the worker of its attempt was frozen (SIGSTOP)
// since, not more than modelRateTransit before x arrived (a frozen worker
// sends what it claimed before its freeze once thawed).
func (s *seqRun) claimedFrom(d *checkData, x mdelivery) time.Time {
	created := d.byID[x.Run].Created.Add(-modelTol)
	if s.senderFrozen(d, x, created, x.At) {
		return created
	}
	return instant.Later(created, x.At.Add(-modelRateTransit))
}

// senderFrozen reports whether the worker of x's attempt was frozen
// (SIGSTOP) at some moment of [from, to]; for an attempt without a row,
// whether any instance was.
func (s *seqRun) senderFrozen(d *checkData, x mdelivery, from, to time.Time) bool {
	if a := d.atts[x.Run][x.Attempt]; a != nil {
		return s.frozen(a.Worker, from, to)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.ContainsFunc(s.stops, func(st stopRec) bool {
		return st.signal == "SIGSTOP" && st.at.Before(to) && st.thawed.After(from)
	})
}

// rateStretches are the stretches of key's history under a rate. A
// setting took effect at some moment of its call, [sent, recv], so its
// stretch holds the claims from its recv to the next change's sent, each
// end moved in by modelTol. A request is judged in a stretch only when its
// claim surely lies within it (of): one that may have been claimed before
// a change or after it (from claimedFrom to its arrival) is judged in
// neither, as the bucket it drew on is ambiguous. Nothing is judged from
// a change of unknown outcome on (no answer: it may take effect at any
// moment after it was sent).
func (dm *deliveryModel) rateStretches(key string) []rateStretch {
	vs := dm.limits[key]
	var unknown time.Time
	if us := dm.unknown[key]; len(us) > 0 {
		unknown = us[0].Add(-modelTol)
	}
	var out []rateStretch
	for i, v := range vs {
		if !v.exists || v.rate == nil {
			continue
		}
		st := rateStretch{v: v, from: v.recv.Add(modelTol)}
		if i+1 < len(vs) {
			st.to = vs[i+1].sent.Add(-modelTol)
		}
		if !unknown.IsZero() && (st.to.IsZero() || unknown.Before(st.to)) {
			st.to = unknown
		}
		if st.to.IsZero() || st.to.After(st.from) {
			out = append(out, st)
		}
	}
	return out
}

// of returns the requests surely claimed within the stretch: no earlier
// than its start, and arrived (so claimed) by its end.
func (st rateStretch) of(reqs []rateReq) []rateReq {
	var out []rateReq
	for _, r := range reqs {
		if !r.from.Before(st.from) && (st.to.IsZero() || !r.x.At.After(st.to)) {
			out = append(out, r)
		}
	}
	return out
}

// allows is the most claims the stretch's bucket lets through within a
// span of time: its capacity (the most it can hold when the span begins)
// and what it refills over the span.
func (st rateStretch) allows(span time.Duration) float64 {
	rate, per := float64(*st.v.rate), 1.0
	if st.v.per != nil {
		per = float64(*st.v.per)
	}
	return rate + rate*span.Seconds()/per
}

// worst returns the window of reqs (in arrival order) with the most
// requests beyond what the bucket allows (or the least room), and how many
// requests end a window at the rate past the burst (atRate): the rate
// held them back, so the check had something to hold.
func (st rateStretch) worst(reqs []rateReq) (worst rateWindow, pressed int) {
	for last := range reqs {
		from, at := reqs[last].from, false
		for first := last; first >= 0; first-- {
			from = instant.Earlier(from, reqs[first].from)
			w := rateWindow{first: first, last: last, n: last - first + 1, from: from,
				allowed: st.allows(reqs[last].x.At.Sub(from))}
			if worst.n == 0 || w.excess() > worst.excess() {
				worst = w
			}
			at = at || st.atRate(w.n, reqs[last].x.At.Sub(reqs[first].x.At))
		}
		if at {
			pressed++
		}
	}
	return worst, pressed
}

// atRate reports whether n requests arriving within span came at the
// stretch's rate past its burst: more than the bucket holds, no slower
// than it refills (a backlog drained at the rate is; requests that came
// slower than the rate, or fewer than a burst, never met the limit).
func (st rateStretch) atRate(n int, span time.Duration) bool {
	return n > *st.v.rate && float64(n) >= st.allows(span)-float64(*st.v.rate)
}

// describe is a window beyond its bucket, for the violation's message.
func (w rateWindow) describe(st rateStretch, reqs []rateReq) string {
	var xs []string
	for _, r := range reqs[w.first : w.last+1] {
		if len(xs) == 12 {
			xs = append(xs, fmt.Sprintf("... and %d more", w.last-w.first+1-12))
			break
		}
		xs = append(xs, fmt.Sprintf("%s run %d attempt %d at %s", r.x.Key, r.x.Run, r.x.Attempt, r.x.At.Format("15:04:05.000")))
	}
	last := reqs[w.last].x.At
	return fmt.Sprintf("%d requests arrived from %s to %s, claimed no earlier than %s: the bucket allows %.1f over those %s; %s",
		w.n, reqs[w.first].x.At.Format("15:04:05.000"), last.Format("15:04:05.000"), w.from.Format("15:04:05.000"),
		w.allowed, last.Sub(w.from).Round(time.Millisecond), strings.Join(xs, "; "))
}
