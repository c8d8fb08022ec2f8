// Package deploy holds no code: its tests check the deployment files
// beside it (deploy/kubernetes, deploy/systemd, deploy/grafana,
// deploy/prometheus) and the repository's compose.yaml with the parsers
// of the tools that will read them, and that every metric the dashboard
// and the alert rules name is one a real `chronos serve` exports.
//
// It is a module of its own so that those parsers (Prometheus, the
// Kubernetes API types, the compose specification) stay out of the
// chronos module's dependencies: `make test` runs it with
// `cd deploy && go test ./...`.
package deploy
