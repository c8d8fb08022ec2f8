#!/usr/bin/env bash
# testdb.sh -- run a command with TEST_DATABASE_URL pointing at a Postgres
# that the tests may use (its role must be able to CREATE DATABASE: every
# test gets a fresh database of its own).
#
#   scripts/testdb.sh go test -race ./...
#
# Where the server comes from, in order (CHRONOS_TESTDB picks one):
#   1. TEST_DATABASE_URL, when set: used as it is.
#   2. local:  a throwaway cluster from the local initdb/pg_ctl (PATH or
#      /usr/lib/postgresql/*/bin), in a temp dir, on a free port, trust
#      auth, fsync off, 300 connections, stopped and removed when the
#      command ends. initdb refuses to run as root, so as root the cluster
#      runs as user postgres (created if missing).
#   3. server: a server on 127.0.0.1:5432, as user postgres, then root
#      (database postgres, no password); then compose.yaml's Postgres, as
#      chronos/chronos on 127.0.0.1:5433 (compose publishes it there so it
#      never clashes with a server on 5432).
#   4. docker: `docker compose up -d postgres` (left running afterwards).
# CHRONOS_TESTDB=auto (default) tries 2, 3, 4 in turn; server, local or
# docker tries only that one, e.g. CHRONOS_TESTDB=server to test against
# the server on 5432. A throwaway cluster comes first because the test
# run is the only thing on it: `make test` opens a couple of hundred
# connections at its peak (a shared server's default max_connections is
# 100, and other clients' load slows timing-bound tests), and nothing is
# left behind. A shared server is only ever read from: never stopped or
# reconfigured.
set -euo pipefail

log() { echo "testdb: $*" >&2; }
die() { log "$*"; exit 1; }

[ $# -gt 0 ] || die "usage: $0 command [args...]"

mode=${CHRONOS_TESTDB:-auto}
case $mode in auto | server | local | docker) ;; *) die "CHRONOS_TESTDB must be auto, server, local or docker, not '$mode'" ;; esac

# usable URL: the server answers and the role may create databases.
usable() {
	local out
	if command -v psql >/dev/null 2>&1; then
		out=$(PGCONNECT_TIMEOUT=3 psql "$1" -XAtqc "select rolcreatedb or rolsuper from pg_roles where rolname = current_user" 2>/dev/null) || return 1
		[ "$out" = t ]
	else
		# Without psql we can only ask whether something listens.
		pg_isready -q -d "$1" -t 3 2>/dev/null
	fi
}

# COMPOSE_URL is compose.yaml's Postgres as the host sees it.
COMPOSE_URL="postgres://chronos:chronos@127.0.0.1:5433/chronos?sslmode=disable"

try_server() {
	local port url answered=
	for port in 5432 5433; do
		if command -v pg_isready >/dev/null 2>&1 && ! pg_isready -q -h 127.0.0.1 -p "$port" -t 3; then
			continue
		fi
		answered="$answered $port"
		local urls=("postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable" "postgres://root@127.0.0.1:5432/postgres?sslmode=disable")
		[ "$port" = 5433 ] && urls=("$COMPOSE_URL")
		for url in "${urls[@]}"; do
			if usable "$url"; then
				TEST_DATABASE_URL=$url
				log "using the server on 127.0.0.1:$port ($url)"
				return 0
			fi
		done
	done
	[ -z "$answered" ] || log "a server answers on 127.0.0.1 port(s)$answered but none of postgres, root (5432) or chronos (5433, compose) may connect and create databases"
	return 1
}

pg_bindir() {
	local d
	if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
		dirname "$(readlink -f "$(command -v initdb)")"
		return 0
	fi
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -rV); do
		if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
			echo "$d"
			return 0
		fi
	done
	return 1
}

free_port() {
	local port i
	for i in $(seq 1 50); do
		port=$((20000 + RANDOM % 40000))
		if ! (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return 0
		fi
	done
	return 1
}

cluster_dir=
cluster_user=
cluster_bin=
as_cluster_user() {
	if [ -z "$cluster_user" ]; then
		"$@"
	elif command -v runuser >/dev/null 2>&1; then
		runuser -u "$cluster_user" -- "$@"
	else
		su -s /bin/sh "$cluster_user" -c "$(printf '%q ' "$@")"
	fi
}

stop_cluster() {
	[ -n "$cluster_dir" ] || return 0
	as_cluster_user "$cluster_bin/pg_ctl" -D "$cluster_dir/data" -m immediate -w stop >/dev/null 2>&1 || true
	rm -rf "$cluster_dir"
	log "stopped and removed the throwaway cluster"
	cluster_dir=
}

try_local() {
	cluster_bin=$(pg_bindir) || { log "no initdb/pg_ctl found (PATH, /usr/lib/postgresql/*/bin)"; return 1; }
	if [ "$(id -u)" = 0 ]; then
		cluster_user=postgres
		if ! id "$cluster_user" >/dev/null 2>&1; then
			useradd --system --no-create-home --shell /usr/sbin/nologin "$cluster_user" ||
				{ log "cannot create user $cluster_user for initdb"; return 1; }
		fi
	fi
	cluster_dir=$(mktemp -d "${TMPDIR:-/tmp}/chronos-testdb.XXXXXX")
	trap stop_cluster EXIT
	trap 'exit 130' INT TERM # so that the EXIT trap runs on ^C or kill too
	[ -z "$cluster_user" ] || chown "$cluster_user" "$cluster_dir"
	if ! as_cluster_user "$cluster_bin/initdb" -D "$cluster_dir/data" -U postgres -A trust -E UTF8 --no-sync \
		>"$cluster_dir/initdb.log" 2>&1; then
		cat "$cluster_dir/initdb.log" >&2
		log "initdb failed"
		stop_cluster
		return 1
	fi
	local port attempt
	for attempt in 1 2 3; do
		port=$(free_port) || break
		# Durability is pointless for a throwaway cluster; connections are
		# many because tests run in parallel, each with its own database.
		if as_cluster_user "$cluster_bin/pg_ctl" -D "$cluster_dir/data" -l "$cluster_dir/server.log" -w -t 60 \
			-o "-p $port -k $cluster_dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" \
			start >/dev/null; then
			TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
			log "using a throwaway cluster ($cluster_bin, $cluster_dir, port $port)"
			return 0
		fi
		tail -5 "$cluster_dir/server.log" >&2 || true
	done
	log "could not start the throwaway cluster"
	stop_cluster
	return 1
}

try_docker() {
	local root compose
	if command -v docker >/dev/null 2>&1 && docker compose version >/dev/null 2>&1; then
		compose="docker compose"
	elif command -v docker-compose >/dev/null 2>&1; then
		compose=docker-compose
	else
		log "neither docker compose nor docker-compose found"
		return 1
	fi
	root=$(cd "$(dirname "$0")/.." && pwd)
	[ -f "$root/compose.yaml" ] || { log "no compose.yaml"; return 1; }
	(cd "$root" && $compose up -d postgres) >&2 || { log "$compose up -d postgres failed"; return 1; }
	local url=$COMPOSE_URL i
	for i in $(seq 1 60); do
		if usable "$url"; then
			TEST_DATABASE_URL=$url
			log "using docker compose's postgres ($url; left running: docker compose stop postgres)"
			return 0
		fi
		sleep 1
	done
	log "docker compose's postgres did not become ready"
	return 1
}

if [ -n "${TEST_DATABASE_URL:-}" ]; then
	log "using TEST_DATABASE_URL as given"
else
	case $mode in
	server) try_server || die "no usable server on 127.0.0.1:5432 (or compose's on 5433)" ;;
	local) try_local || die "could not start a throwaway cluster" ;;
	docker) try_docker || die "could not start postgres with docker compose" ;;
	auto) try_local || try_server || try_docker ||
		die "no Postgres: start one on 127.0.0.1:5432 (trust auth), install postgresql for a throwaway cluster, or set TEST_DATABASE_URL" ;;
	esac
fi
export TEST_DATABASE_URL

# Not exec: the EXIT trap must stop the throwaway cluster afterwards.
set +e
"$@"
status=$?
set -e
exit $status
