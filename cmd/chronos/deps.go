package main

// Pins the modules the packages are being built on, so go.mod stays put
// while they are written in parallel. Remove when every one is imported
// for real.
import (
	_ "github.com/gin-gonic/gin"
	_ "github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgxlisten"
	_ "github.com/jackc/tern/v2/migrate"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/sourcegraph/conc/pool"
	_ "go.uber.org/goleak"
)
