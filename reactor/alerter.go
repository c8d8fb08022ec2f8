package reactor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// AlertConfig configures dead-run alerts: the signed POSTs that tell a
// job's on_dead_url and the cluster's DEAD_LETTER_WEBHOOK that a run went
// dead. Zero fields take the defaults below.
//
// An alert is written to the dead_alerts outbox in the transaction that
// makes its run dead (a trigger, migration 010), so it is as durable as
// the death itself. Every instance sends alerts: it claims them FOR UPDATE
// SKIP LOCKED with a lease, so one instance sends each at a time, and an
// instance that dies leaves its alerts to the others once the lease runs
// out. Delivery is at least once: an alert may arrive twice (deduplicate
// on webhook-id), never not at all while attempts remain. A failed
// attempt is retried with capped exponential backoff, Attempts times in
// all (about a day with the defaults); then the alert is given up, logged
// and counted (alert.dead_run, op "failed"), and nothing alerts about it:
// alerts are not runs and can never produce another alert.
type AlertConfig struct {
	// Webhook is DEAD_LETTER_WEBHOOK: every dead run of every job is
	// alerted there too. "": only jobs' on_dead_url. Set it alike on every
	// instance: a cluster alert waits for an instance that has one.
	Webhook string
	// PollInterval is how often the leader looks for alerts that no event
	// announced (10s): a safety net, like the dispatcher's idle poll.
	PollInterval time.Duration
	// Timeout bounds each alert request (10s).
	Timeout time.Duration
	// Attempts is how many times an alert is sent before it is given up
	// (35: with the backoff below, about a day).
	Attempts int
	// BackoffBase and BackoffMax space the attempts: base·2^(n-1), capped
	// at max, less up to 20% jitter (10s and 1h).
	BackoffBase, BackoffMax time.Duration
	// MaxAge drops an alert still unsent this long after its run died
	// (48h): the cluster was down longer than the retries last, or no
	// instance has a DEAD_LETTER_WEBHOOK for a cluster alert.
	MaxAge time.Duration
}

// Defaults of AlertConfig.
const (
	DefaultAlertPollInterval = 10 * time.Second
	DefaultAlertTimeout      = 10 * time.Second
	DefaultAlertAttempts     = 35
	DefaultAlertBackoffBase  = 10 * time.Second
	DefaultAlertBackoffMax   = time.Hour
	DefaultAlertMaxAge       = 48 * time.Hour
)

func (c AlertConfig) withDefaults() AlertConfig {
	if c.PollInterval <= 0 || c.PollInterval > alertSenderEvery {
		c.PollInterval = DefaultAlertPollInterval
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultAlertTimeout
	}
	if c.Attempts <= 0 {
		c.Attempts = DefaultAlertAttempts
	}
	if c.BackoffBase <= 0 {
		c.BackoffBase = DefaultAlertBackoffBase
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = DefaultAlertBackoffMax
	}
	c.BackoffMax = max(c.BackoffMax, c.BackoffBase)
	if c.MaxAge <= 0 {
		c.MaxAge = DefaultAlertMaxAge
	}
	return c
}

// Alerter tuning.
const (
	alertBatch       = 16              // alerts claimed, and sent concurrently, at once
	alertExpireEvery = time.Minute     // how often the leader drops expired alerts
	alertExpireBatch = 1000            // per statement
	alertWriteTime   = 5 * time.Second // bound of each write after a send, even on shutdown
	alertTimerFloor  = 10 * time.Millisecond
	alertTimerMax    = time.Second // the floor's ceiling, for a clock ahead of the database's
	// alertSenderEvery is how often an instance with DEAD_LETTER_WEBHOOK
	// says so (sql.AlertSenderSeen); migration 010 trusts it for five
	// minutes.
	alertSenderEvery = time.Minute
)

// HeaderAlert names the alert type on an alert request ("run.dead"), so a
// receiver that also gets deliveries tells the two apart.
const HeaderAlert = "X-Chronos-Alert"

// AlertWebhookID is the webhook-id of the alert that run runID went dead
// sent to one destination ("job" for on_dead_url, "cluster" for
// DEAD_LETTER_WEBHOOK): the same on every attempt, so a receiver
// deduplicates on it. It is made of the run's id, not the outbox row's:
// a run goes dead once (a redrive is a new run), and its id is never
// given out again, while an outbox row written by a completion that a
// database crash took back (REACTOR_SYNCHRONOUS_COMMIT=off) may see its
// id handed to another alert.
func AlertWebhookID(runID int64, dest string) string {
	return "alert_" + dest + "_" + strconv.FormatInt(runID, 10)
}

// alerter sends the dead-run alerts of the outbox. One runs on every
// instance; see AlertConfig.
type alerter struct {
	r      *Reactor
	cfg    AlertConfig
	client *http.Client
	lease  time.Duration
}

// newAlerter sends through the executor's client: the same transport as
// deliveries, so the same address policy at dial time, and no redirects.
func newAlerter(r *Reactor) *alerter {
	cfg := r.cfg.Alerts.withDefaults()
	return &alerter{r: r, cfg: cfg, client: r.exec.client, lease: cfg.Timeout + 30*time.Second}
}

// alertWakes are the events after which an alert may be waiting: a run of
// this instance died (its completer says so), the reaper reclaimed leases
// (some may have died), another instance made runs dead (a batch that was
// all dead: a mixed batch is left to the instance that wrote it, which
// knows from its own completer), or the listener resynced.
func alertWakes(e chronos.Event) bool {
	switch e.Type {
	case chronos.EventAttempted:
		return e.Status == chronos.StatusDead
	case chronos.EventRunChanged:
		return e.Status == chronos.StatusDead
	case chronos.EventReclaimed, chronos.EventResync:
		return true
	}
	return false
}

// run sends alerts until ctx ends. It claims at once, on a wake event, when
// the earliest retry it knows of is due, and, while this instance leads,
// every PollInterval; alerts claimed when ctx ends are handed back.
func (a *alerter) run(ctx context.Context) {
	r := a.r
	wake := r.bus.SubscribeWake(alertWakes)
	defer wake.Close()
	poll := time.NewTicker(a.cfg.PollInterval)
	defer poll.Stop()
	timer := disarmedTimer()
	defer timer.Stop()
	var (
		armed      time.Time // when timer fires; zero when disarmed
		floor      = alertTimerFloor
		lastExpire time.Time
		lastSeen   time.Time
		claimNow   = true
	)
	// An instance with a webhook says so first, so runs that die from now
	// on get their cluster alert.
	seen := func() {
		if a.cfg.Webhook == "" || time.Since(lastSeen) < alertSenderEvery {
			return
		}
		cctx, cancel := context.WithTimeout(ctx, claimTimeout)
		defer cancel()
		if err := r.db.AlertSenderSeen(cctx, r.cfg.Instance); err != nil {
			if ctx.Err() == nil {
				r.log.Error("record this instance as a sender of cluster alerts failed", "err", err)
			}
			return
		}
		lastSeen = time.Now()
	}
	seen()
	arm := func(t time.Time, idle bool) {
		// The time is the database's. A clock ahead of it fires the timer
		// early, to find nothing due: after such an idle round, wait at
		// least floor, doubling, rather than spin.
		d := t.Sub(r.now())
		if idle {
			d = max(d, floor)
			floor = min(2*floor, alertTimerMax)
		} else {
			floor = alertTimerFloor
		}
		if !armed.IsZero() && !t.Before(armed) {
			return
		}
		armed = t
		timer.Reset(max(d, 0))
	}
	fromTimer := false
	for {
		if claimNow {
			claimNow = false
			next, n, err := a.round(ctx)
			if ctx.Err() != nil {
				return
			}
			switch {
			case err != nil:
				arm(r.now().Add(claimRetry), false)
			case next != nil:
				arm(*next, fromTimer && n == 0)
			}
			fromTimer = false
		}
		select {
		case <-ctx.Done():
			return
		case <-wake.C():
			claimNow = true
		case <-timer.C:
			armed = time.Time{}
			claimNow, fromTimer = true, true
		case <-poll.C:
			seen()
			if !r.leader.IsLeader() {
				continue
			}
			claimNow = true
			if time.Since(lastExpire) >= alertExpireEvery {
				lastExpire = time.Now()
				a.expire(ctx)
			}
		}
	}
}

// round claims and sends alerts while claims come back full, and returns
// the earliest time a further alert becomes due, if any, and how many it
// sent.
func (a *alerter) round(ctx context.Context) (*time.Time, int, error) {
	r := a.r
	sent := 0
	for {
		// Not cut short by shutdown: a claim cancelled after its commit
		// would leave alerts leased by nobody until the lease ran out.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
		claim, err := r.db.ClaimAlerts(cctx, r.cfg.Instance, alertBatch, a.lease, a.cfg.Webhook != "")
		cancel()
		if err != nil {
			r.log.Error("claim dead-run alerts failed", "err", err)
			return nil, sent, err
		}
		// The retries these sends schedule are due after claim.Next was
		// read: each send reports its own.
		next := claim.Next
		retries := make([]*time.Time, len(claim.Alerts))
		var wg conc.WaitGroup
		for i, al := range claim.Alerts {
			wg.Go(func() { retries[i] = a.send(ctx, al) })
		}
		wg.Wait()
		sent += len(claim.Alerts)
		for _, t := range retries {
			if t != nil && (next == nil || t.Before(*next)) {
				next = t
			}
		}
		if len(claim.Alerts) < alertBatch || ctx.Err() != nil {
			return next, sent, nil
		}
	}
}

// alertResult is the answer to one alert request.
type alertResult struct {
	statusCode int
	err        string // "" on success
	retryAfter time.Duration
	hasRetry   bool
}

// send makes one attempt at alert al and records its outcome. It returns
// when the alert is due again if the attempt failed and another follows.
func (a *alerter) send(ctx context.Context, al *sql.DeadAlert) *time.Time {
	r := a.r
	dest, url := "job", al.URL
	if url == "" {
		dest, url = "cluster", a.cfg.Webhook
	}
	log := r.log.With("alert", al.ID, "run", al.Alert.Run.ID, "job", al.Alert.Job.ID, "destination", dest, "attempt", al.Attempts)
	// Writes after the request are bounded but not cancelled: an answer
	// received is recorded even while the instance stops.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), alertWriteTime)
	defer cancel()
	if al.Attempts > a.cfg.Attempts {
		// The instance that made the last attempt died before recording it.
		a.giveUp(wctx, al, log, alertResult{err: "the instance making the last attempt stopped"})
		return nil
	}
	res := a.post(ctx, url, dest, al)
	switch {
	case res.err == "":
		ok, err := r.db.AlertSent(wctx, al)
		if err != nil {
			log.Error("record sent dead-run alert failed; it may be sent again", "err", err)
			return nil
		}
		if ok {
			log.Info("dead-run alert delivered", "status_code", res.statusCode)
			a.publish(al, chronos.AlertDelivered, res)
		}
	case ctx.Err() != nil:
		// Shutting down: hand it back uncounted, for another instance.
		if err := r.db.ReleaseAlert(wctx, al); err != nil {
			log.Error("release dead-run alert failed; it is sent again after its lease", "err", err)
		}
	case al.Attempts >= a.cfg.Attempts:
		a.giveUp(wctx, al, log, res)
	default:
		delay := chronos.BackoffDelay(chronos.BackoffExponential, a.cfg.BackoffBase, a.cfg.BackoffMax, al.Attempts)
		if res.hasRetry {
			delay = min(max(res.retryAfter, delay), a.cfg.BackoffMax)
		}
		at, err := r.db.AlertFailed(wctx, al, res.statusCode, res.err, delay)
		if err != nil {
			log.Error("record failed dead-run alert failed; it is sent again after its lease", "err", err)
			return nil
		}
		if at != nil {
			log.Warn("dead-run alert failed; retrying", "err", res.err, "status_code", res.statusCode,
				"retry_in", delay.Round(time.Millisecond), "attempts_left", a.cfg.Attempts-al.Attempts)
			a.publish(al, chronos.AlertRetrying, res)
		}
		return at
	}
	return nil
}

// giveUp drops an alert whose attempts are spent. It is logged and
// counted, and deliberately nothing more: an alert about a failed alert
// could fail in turn.
func (a *alerter) giveUp(ctx context.Context, al *sql.DeadAlert, log *slog.Logger, res alertResult) {
	ok, err := a.r.db.AlertGivenUp(ctx, al)
	if err != nil {
		log.Error("drop failed dead-run alert failed; it is tried again after its lease", "err", err)
		return
	}
	if ok {
		log.Error("dead-run alert given up", "err", res.err, "status_code", res.statusCode,
			"attempts", al.Attempts, "text", al.Alert.Summary())
		a.publish(al, chronos.AlertFailed, res)
	}
}

// publish tells the bus (the event tap, the metrics) about an attempt.
func (a *alerter) publish(al *sql.DeadAlert, outcome string, res alertResult) {
	a.r.bus.Publish(chronos.Event{
		Type: chronos.EventDeadAlert, Instance: a.r.cfg.Instance, Op: outcome,
		JobID: al.Alert.Job.ID, RunID: al.Alert.Run.ID, Attempt: al.Attempts,
		StatusCode: res.statusCode, Error: res.err,
	})
}

// post sends one signed alert request. Like a delivery, success is a 2xx
// answer and nothing else; redirects are not followed.
func (a *alerter) post(ctx context.Context, url, dest string, al *sql.DeadAlert) alertResult {
	body := al.Alert
	body.Type = chronos.AlertTypeRunDead
	body.Text = body.Summary()
	b, err := json.Marshal(body)
	if err != nil {
		return alertResult{err: fmt.Sprintf("encode alert: %v", err)}
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return alertResult{err: fmt.Sprintf("build request: %v", err)}
	}
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderAlert, chronos.AlertTypeRunDead)
	req.Header.Set(HeaderRunID, strconv.FormatInt(al.Alert.Run.ID, 10))
	a.sign(req.Header, dest, al, b)
	resp, err := a.client.Do(req)
	if err != nil {
		return alertResult{err: describeError(ctx, err, a.cfg.Timeout)}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrainBody))
	_ = resp.Body.Close()
	res := alertResult{statusCode: resp.StatusCode}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		res.err = fmt.Sprintf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
			res.retryAfter, res.hasRetry = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		}
	}
	return res
}

// sign signs an alert to the Standard Webhooks convention, as deliveries
// are: one for a job's on_dead_url with the job's own secrets (the
// cluster's SIGNING_SECRET for a job without any, or one deleted since),
// one for DEAD_LETTER_WEBHOOK with the cluster's secret, which is what
// its receiver, hearing of every job, can know. Nothing to sign with: no
// signature headers.
func (a *alerter) sign(h http.Header, dest string, al *sql.DeadAlert, body []byte) {
	now := time.Now()
	var keys [][]byte
	if dest == "job" {
		keys = a.r.exec.signingKeys(&chronos.Job{SigningSecrets: al.SigningSecrets}, now)
	} else {
		keys = a.r.exec.clusterKeys
	}
	if len(keys) == 0 {
		return
	}
	setWebhookSignature(h, keys, AlertWebhookID(al.Alert.Run.ID, dest), strconv.FormatInt(now.Unix(), 10), body)
}

// expire drops the alerts older than MaxAge, logging and counting each.
func (a *alerter) expire(ctx context.Context) {
	r := a.r
	for ctx.Err() == nil {
		gone, err := r.db.ExpireAlerts(ctx, a.cfg.MaxAge, alertExpireBatch)
		if err != nil {
			if ctx.Err() == nil {
				r.log.Error("expire dead-run alerts failed", "err", err)
			}
			return
		}
		for _, e := range gone {
			dest := "job"
			if e.Cluster {
				dest = "cluster"
			}
			r.log.Error("dead-run alert expired unsent", "alert", e.ID, "run", e.RunID, "job", e.JobID,
				"destination", dest, "attempts", e.Attempts, "max_age", a.cfg.MaxAge, "last_error", e.LastError)
			r.bus.Publish(chronos.Event{Type: chronos.EventDeadAlert, Instance: r.cfg.Instance, Op: chronos.AlertExpired,
				JobID: e.JobID, RunID: e.RunID, Attempt: e.Attempts})
		}
		if len(gone) < alertExpireBatch {
			return
		}
	}
}
