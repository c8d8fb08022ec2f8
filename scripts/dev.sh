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
#
# chronos-1 is started first and waited for until it leads, so the leader is
# the instance on :8080, as the README's tour says.
#
# For tests and for a second cluster side by side (cmd/chronos/readme_test.go
# runs the tour against this script):
#   DEV_PORTS="8080 8081"  the replicas' ports
#   DEV_RECEIVE_PORT=9000  the receiver's port
#   DEV_STATE=bin/dev      where the pid files go
#   DEV_BIN=path           a chronos binary to run instead of building bin/chronos
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
BIN="${DEV_BIN:-$ROOT/bin/chronos}"
STATE="${DEV_STATE:-$ROOT/bin/dev}" # pid files, so the README's `kill -9 $(cat bin/dev/chronos-1.pid)` works
read -r -a PORTS <<<"${DEV_PORTS:-8080 8081}"
RECEIVE_PORT="${DEV_RECEIVE_PORT:-9000}"
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
OWN_PIDFILES=()    # the pid files this invocation wrote: the only ones it removes

cleanup() {
	local code=$?
	trap - EXIT INT TERM HUP PIPE
	set +e # clean up as much as possible, whatever fails
	if ((${#PIDS[@]} == 0)) && [[ -z $PG_STARTED && -z $TMP ]]; then
		exit "$code" # nothing was started (say, a port was in use)
	fi
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
	# Only our own pid files: a second `make dev` that refused to start
	# (port in use) must leave the running cluster's alone.
	local f
	for f in "${OWN_PIDFILES[@]}"; do rm -f "$f"; done
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
	[[ " ${OWN_PIDFILES[*]} " == *" $STATE/$name.pid "* ]] || OWN_PIDFILES+=("$STATE/$name.pid")
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

# build compiles bin/chronos and shows progress: the first build downloads
# the modules and compiles every package, a minute or two of silence
# otherwise. -v names each package as it is compiled (none when all are
# cached), and go names each module it downloads.
build() {
	if [[ -n ${DEV_BIN:-} ]]; then
		say "using $BIN (DEV_BIN)"
		return
	fi
	say "building bin/chronos (the first time, go downloads the modules and compiles every package: a minute or two)"
	local n=0 failed="" line
	while IFS= read -r line; do
		case $line in
		"dev: go build failed") failed=1 ;;
		"go: downloading "*) say "  ${line#go: }" ;;
		*[[:space:]]* | *:*) printf '%s\n' "$line" >&2 ;; # a compiler message: show it whole
		*)
			n=$((n + 1))
			if ((n % 20 == 0)); then say "  compiled $n packages (now $line)"; fi
			;;
		esac
	done < <(go build -v -o "$BIN" ./cmd/chronos 2>&1 || echo "dev: go build failed")
	[[ -z $failed ]] || die "go build failed"
	say "built bin/chronos ($n packages compiled)"
}
build

"$BIN" migrate >/dev/null # once, before the replicas race for it (they would wait on its lock anyway)
start receive 32 receive --addr "127.0.0.1:$RECEIVE_PORT"

# wait_ready I [leader] waits until chronos-I is ready (and leads).
wait_ready() {
	local i=$1 want=${2:-} body
	until body=$(curl -fsS "http://127.0.0.1:${PORTS[i - 1]}/readyz" 2>/dev/null) &&
		{ [[ -z $want ]] || [[ $body == *'"self":true'* ]]; }; do
		kill -0 "${PIDS[chronos-$i]}" 2>/dev/null || die "chronos-$i exited during startup"
		sleep 0.2
	done
}
# chronos-1 first, until it leads: then the instance on the first port is
# the leader, whose events the tour's tap shows.
start_replica 1
wait_ready 1 leader
start_replica 2
wait_ready 2

cat <<EOF

$(esc 1)Chronos dev cluster is up$(esc 0)
  database   $DATABASE_URL
  chronos-1  http://localhost:${PORTS[0]}   pid ${PIDS[chronos-1]} (${STATE#"$ROOT"/}/chronos-1.pid), the leader
  chronos-2  http://localhost:${PORTS[1]}   pid ${PIDS[chronos-2]} (${STATE#"$ROOT"/}/chronos-2.pid)
  receive    http://localhost:$RECEIVE_PORT   webhook target; verifies signatures with SIGNING_SECRET=$SIGNING_SECRET
  console    http://localhost:${PORTS[0]}/ui/   sign in with ${API_KEYS%%,*}
  API key    $API_KEYS
             curl -H 'Authorization: Bearer ${API_KEYS%%,*}' localhost:${PORTS[0]}/v1/jobs
  event tap  bin/chronos tap --key ${API_KEYS%%,*} --url http://localhost:${PORTS[0]},http://localhost:${PORTS[1]}
  the CLI    export PATH="${BIN%/*}:\$PATH" CHRONOS_API_KEY=${API_KEYS%%,*}   # then: chronos jobs list
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
