package reactor

// InFlight is how many runs this instance's workers hold right now: claimed
// and not yet handed back (being delivered, or waiting for their outcome to
// be written). It is the chronos_runs_in_flight gauge. Runs claimed into
// the prefetch queue (prefetch.go) are not counted until a worker takes
// them.
func (r *Reactor) InFlight() int { return r.cfg.WorkerConcurrency - r.disp.free() }

// WorkerSlots is WORKER_CONCURRENCY: the most runs InFlight can reach.
func (r *Reactor) WorkerSlots() int { return r.cfg.WorkerConcurrency }
