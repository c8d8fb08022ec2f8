// Package bench is the load generator behind `chronos bench`: it measures
// a Chronos cluster end to end against a real Postgres, as River's
// riverbench does for River.
//
// Each scenario gets a world of its own (env.go): a migrated database (a
// throwaway one on the server of Config.ServerURL, or Config.DatabaseURL
// as it is), a local webhook target that answers 204 and records when each
// request arrived (target.go), and chronos instances, in-process and wired
// like `chronos serve` (inprocess.go), or child processes running the
// binary's serve command (child.go). A scenario returns a result (its
// parameters, figures, notes, per-window tables, and the rules it broke),
// printed as a short table or one JSON object (result.go).
//
// The scenarios, each in its file: throughput (runs inserted due at
// once), latency (trigger to delivery), schedule (cron lag), idle (the
// database load of an idle instance), scale (a million jobs defined),
// burst (one-shot jobs created through the API, all due at one instant),
// herd (cron jobs whose next occurrence is the same instant), create (job
// creation through the API) and sustained (a steady load with a short
// run retention, watched window by window).
//
// Nothing here asserts a speed: the figures are for people, and the rules
// a scenario enforces are about correctness (every run delivered, no
// occurrence missed or doubled).
//
// The command line (flags, help, exit codes) is package main's
// (cmd/chronos/bench.go); this package takes a Config.
package bench
