package main

import (
	"context"
	"fmt"
	"net"
	nethttp "net/http"
	"time"
)

func init() {
	register(&command{name: "health", summary: "probe a local instance's /readyz (a container HEALTHCHECK)", run: runHealth})
}

// healthTimeout bounds one probe: Docker's HEALTHCHECK has its own
// timeout, but a probe should never be the thing that hangs.
const healthTimeout = 3 * time.Second

func runHealth(ctx context.Context, args []string, env *environ) error {
	fs := newFlagSet(env, "health", "[flags]", `Probes a Chronos instance on this host and exits 0 when it answers 200, 1
otherwise: the HEALTHCHECK of the container image, which has no shell or
curl. By default it asks GET /readyz on the port of HTTP_ADDR (:8080), so an
instance is healthy when its database answers and its listener is connected.

Examples:
  chronos health
  chronos health --url http://127.0.0.1:9000/healthz   # chronos receive`)
	u := fs.String("url", "", "URL to probe (default http://127.0.0.1:<port of HTTP_ADDR>/readyz)")
	if err := fs.parse(args); err != nil {
		return err
	}
	target := *u
	if target == "" {
		addr := envOr(env, "HTTP_ADDR", ":8080")
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return usagef("health: invalid HTTP_ADDR %q: must be host:port", addr)
		}
		target = "http://" + net.JoinHostPort(healthHost(addr), port) + "/readyz"
	}
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	req, err := nethttp.NewRequestWithContext(ctx, nethttp.MethodGet, target, nil)
	if err != nil {
		return usagef("health: invalid --url %q: %v", target, err)
	}
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != nethttp.StatusOK {
		return fmt.Errorf("health: %s answered %s", target, resp.Status)
	}
	fmt.Fprintf(env.stdout, "%s: %s\n", target, resp.Status)
	return nil
}

// healthHost is where to reach an instance listening on addr from the same
// host: its own host, or loopback for a wildcard address.
func healthHost(addr string) string {
	host, _, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return "127.0.0.1"
	}
	return host
}

// withHealthz answers GET /healthz itself, so that a probe of `chronos
// receive` (compose's healthcheck) is not printed as a delivery.
func withHealthz(next nethttp.Handler) nethttp.Handler {
	return nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if r.Method == nethttp.MethodGet && r.URL.Path == "/healthz" {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprintln(w, "ok")
			return
		}
		next.ServeHTTP(w, r)
	})
}
