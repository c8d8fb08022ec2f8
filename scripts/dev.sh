#!/usr/bin/env bash
# Chronos dev cluster without Docker (`make dev`):
#   - a throwaway Postgres in a temp dir on a free port (or $DATABASE_URL),
#   - bin/chronos built from this tree,
#   - two replicas on :8080 and :8081 (API key dev-key), restarted when they die,
#   - `chronos receive` on :9000 as a webhook target.
# Ctrl-C (or SIGTERM) stops everything and removes the temp cluster.
#
# Needs Go and, without DATABASE_URL, the Postgres server binaries (initdb,
# pg_ctl; found in PATH or /usr/lib/postgresql/*/bin). Any chronos variable
# you export (WORKER_CONCURRENCY, LOG_LEVEL, ...) is passed to the replicas.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
BIN="$ROOT/bin/chronos"
STATE="$ROOT/bin/dev" # pid files, so the README's `kill -9 $(cat bin/dev/chronos-1.pid)` works
PORTS=(8080 8081)
RECEIVE_PORT=9000
RESTART_DELAY=3 # seconds before a replica that died is started again

export API_KEYS="${API_KEYS:-dev-key}"
export SIGNING_SECRET="${SIGNING_SECRET:-dev-secret}"
export ALLOW_PRIVATE_TARGETS="${ALLOW_PRIVATE_TARGETS:-true}" # the receiver is on localhost
export LOG_FORMAT="${LOG_FORMAT:-text}"

# Colour only on a terminal.
if [[ -t 1 && -z ${NO_COLOR:-} ]]; then
	esc() { printf '\033[%sm' "$1"; }
else
	esc() { :; }
fi
say() { printf '%s[dev]%s %s\n' "$(esc 1)" "$(esc 0)" "$*"; }
die() { printf '[dev] error: %s\n' "$*" >&2; exit 1; }

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

TMP=""
PG_BIN=""
PG_STARTED=""
declare -A PIDS=() # name -> pid

cleanup() {
	local code=$?
	trap - EXIT INT TERM HUP PIPE
	set +e # clean up as much as possible, whatever fails
	say "stopping..." 2>/dev/null
	local pid
	for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	# Graceful shutdown releases runs and leadership; give it SHUTDOWN_TIMEOUT.
	local deadline=$((SECONDS + 35))
	for pid in "${PIDS[@]}"; do
		while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
		kill -KILL "$pid" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -f "$STATE"/*.pid
	if [[ -n $PG_STARTED ]]; then
		as_pg "$PG_BIN/pg_ctl" -D "$TMP/data" -m fast -w stop >/dev/null 2>&1 || true
	fi
	if [[ -n $TMP ]]; then rm -rf "$TMP"; fi
	say "stopped; nothing left running" 2>/dev/null
	exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
trap 'exit 141' PIPE # our terminal or pipe went away: still clean up

# as_pg runs a Postgres server binary as a user initdb accepts (not root).
as_pg() {
	if [[ $(id -u) == 0 ]]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

find_pg_bin() {
	if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
		# Resolve symlinks: /usr/local/bin/initdb may point into the real bin dir.
		dirname "$(readlink -f "$(command -v initdb)")"
		return
	fi
	local d
	d=$(printf "%s\n" /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
	[[ -n $d && -x $d/initdb ]] || return 1
	echo "$d"
}

start_postgres() {
	PG_BIN=$(find_pg_bin) || die "no DATABASE_URL and no Postgres binaries (initdb, pg_ctl) in PATH or /usr/lib/postgresql/*/bin; install postgresql or set DATABASE_URL"
	if [[ $(id -u) == 0 ]] && ! id postgres >/dev/null 2>&1; then
		die "running as root: initdb needs a 'postgres' user to run as (or set DATABASE_URL)"
	fi
	TMP=$(mktemp -d "${TMPDIR:-/tmp}/chronos-dev.XXXXXX")
	[[ $(id -u) == 0 ]] && chown postgres "$TMP"
	local port=55432
	while port_busy "$port"; do port=$((port + 1)); done
	as_pg "$PG_BIN/initdb" -D "$TMP/data" -U chronos -A trust -E UTF8 --no-sync >"$TMP/initdb.log" 2>&1 ||
		{ cat "$TMP/initdb.log" >&2; die "initdb failed"; }
	as_pg "$PG_BIN/pg_ctl" -D "$TMP/data" -l "$TMP/postgres.log" -w \
		-o "-p $port -k $TMP -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null ||
		{ cat "$TMP/postgres.log" >&2; die "postgres did not start"; }
	PG_STARTED=1
	local db=chronos createdb
	createdb=$(command -v "$PG_BIN/createdb" createdb | head -n 1) || true
	if [[ -n $createdb ]]; then
		"$createdb" -h 127.0.0.1 -p "$port" -U chronos chronos
	else
		db=postgres # initdb's own database will do
	fi
	export DATABASE_URL="postgres://chronos@127.0.0.1:$port/$db?sslmode=disable"
	say "throwaway Postgres ($("$PG_BIN/postgres" --version | awk '{print $3}')) in $TMP on port $port"
}

# start NAME COLOR ARGS... starts bin/chronos with its output prefixed.
start() {
	local name=$1 color=$2
	shift 2
	# The prefixer ignores Ctrl-C and ends at EOF, so chronos can still log
	# its graceful shutdown (a dead pipe would kill it with SIGPIPE).
	"$BIN" "$@" > >(
		trap '' INT
		exec sed -u "s/^/$(esc "$color")[$name]$(esc 0) /"
	) 2>&1 &
	PIDS[$name]=$!
	echo "$!" >"$STATE/$name.pid"
}

start_replica() {
	local i=$1
	INSTANCE_ID="chronos-$i" HTTP_ADDR="127.0.0.1:${PORTS[i - 1]}" start "chronos-$i" "3$((i + 3))" serve
}

for p in "${PORTS[@]}" "$RECEIVE_PORT"; do
	port_busy "$p" && die "port $p is in use (another dev cluster, or docker compose up?)"
done
command -v go >/dev/null || die "go is not in PATH"
mkdir -p "$STATE"

if [[ -n ${DATABASE_URL:-} ]]; then
	say "using DATABASE_URL from the environment"
else
	start_postgres
fi

say "building bin/chronos"
go build -o "$BIN" ./cmd/chronos

"$BIN" migrate >/dev/null # once, before the replicas race for it (they would wait on its lock anyway)
start receive 32 receive --addr "127.0.0.1:$RECEIVE_PORT"
start_replica 1
start_replica 2

for i in 1 2; do
	until curl -fsS -o /dev/null "http://127.0.0.1:${PORTS[i - 1]}/readyz" 2>/dev/null; do
		kill -0 "${PIDS[chronos-$i]}" 2>/dev/null || die "chronos-$i exited during startup"
		sleep 0.2
	done
done

cat <<EOF

$(esc 1)Chronos dev cluster is up$(esc 0)
  database   $DATABASE_URL
  chronos-1  http://localhost:8080   pid ${PIDS[chronos-1]} (bin/dev/chronos-1.pid)
  chronos-2  http://localhost:8081   pid ${PIDS[chronos-2]} (bin/dev/chronos-2.pid)
  receive    http://localhost:9000   webhook target; verifies signatures with SIGNING_SECRET=$SIGNING_SECRET
  API key    $API_KEYS
             curl -H 'Authorization: Bearer ${API_KEYS%%,*}' localhost:8080/v1/jobs
  event tap  bin/chronos tap --key ${API_KEYS%%,*} --url http://localhost:8080,http://localhost:8081
A replica that dies is started again after ${RESTART_DELAY}s. Ctrl-C stops everything.

EOF

# Supervise: restart a replica that died (kill -9 in the failover demo);
# the receiver too. `sleep & wait` keeps Ctrl-C handled at once.
declare -A DIED=()
while true; do
	for name in "${!PIDS[@]}"; do
		pid=${PIDS[$name]}
		if ! kill -0 "$pid" 2>/dev/null; then
			if [[ -z ${DIED[$name]:-} ]]; then
				code=0
				wait "$pid" 2>/dev/null || code=$?
				say "$name (pid $pid) exited with status $code; restarting in ${RESTART_DELAY}s"
				DIED[$name]=$SECONDS
			elif ((SECONDS - DIED[$name] >= RESTART_DELAY)); then
				unset "DIED[$name]"
				case $name in
				chronos-*) start_replica "${name#chronos-}" ;;
				receive) start receive 32 receive --addr "127.0.0.1:$RECEIVE_PORT" ;;
				esac
				say "$name restarted (pid ${PIDS[$name]})"
			fi
		fi
	done
	sleep 0.5 &
	wait $! || true
done
