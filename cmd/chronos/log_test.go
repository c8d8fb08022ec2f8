package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestLoggerJSONDurationsAndNoRepeatedKeys(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	log := newLogger(&b, slog.LevelInfo, "json")
	// As reactor.New and NewLeader do: the second With names the component again.
	leader := log.With("component", "reactor", "instance", "i-1").With("component", "leader", "instance", "i-1")
	leader.Info("became leader", "took", 3*time.Second, "poll", 250*time.Millisecond)
	line := b.String()
	if strings.Count(line, `"component"`) != 1 || strings.Count(line, `"instance"`) != 1 {
		t.Fatalf("repeated keys: %s", line)
	}
	var m map[string]any
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if m["component"] != "leader" || m["instance"] != "i-1" || m["took"] != "3s" || m["poll"] != "250ms" {
		t.Fatalf("line %s: want component=leader, took \"3s\", poll \"250ms\"", line)
	}

	// A record's own attribute replaces a bound one; groups still work.
	b.Reset()
	log.With("component", "serve").Info("x", "component", "api", slog.Group("g", "d", time.Minute))
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if strings.Count(b.String(), `"component"`) != 1 || m["component"] != "api" || m["g"].(map[string]any)["d"] != "1m0s" {
		t.Fatalf("line %s", b.String())
	}
	b.Reset()
	log.With("component", "serve").WithGroup("req").With("id", 7).Info("y", "ms", 2*time.Millisecond)
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	req := m["req"].(map[string]any)
	if m["component"] != "serve" || req["id"] != float64(7) || req["ms"] != "2ms" {
		t.Fatalf("line %s", b.String())
	}
}

func TestLoggerTextNoRepeatedKeys(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	newLogger(&b, slog.LevelInfo, "text").With("component", "reactor").With("component", "leader").Info("m", "d", time.Second)
	if line := b.String(); strings.Count(line, "component=") != 1 || !strings.Contains(line, "component=leader") || !strings.Contains(line, "d=1s") {
		t.Fatalf("line %q", line)
	}
}
