#!/usr/bin/env bash
# compare-postfix.sh: relayq against Postfix, side by side, with Postfix's own
# load generator (smtp-source) and sink (smtp-sink) for both, so neither relay
# is measured by relayq's tools alone.
#
#   bench/compare-postfix.sh [--install] [--rounds N] [--scenarios "a b c"]
#
# Scenarios: a = 20 sessions x 1 KiB x 10,000; b = 20 x 20 KiB x 5,000;
# c = accept-only, 20 x 1 KiB x 10,000 with the next hop down.
# Each round runs the direct ceiling (smtp-source -> smtp-sink), then Postfix,
# then relayq (P R P R ...), each relay on a fresh, empty queue. End to end is
# messages / (start of smtp-source .. smtp-sink has counted all of them,
# smtp-sink -M N exits then); accepted is messages / smtp-source's run time.
# smtp-source runs with -d (connections reused, one message per transaction).
#
# CPU ms/msg: the machine's busy time (/proc/stat: user, nice, system, irq,
# softirq, steal) over the same span, minus the busy time of that round's
# direct run (the load tools alone), divided by the messages. It counts
# everything a relay makes the machine do (all of Postfix's processes,
# kernel work for fsync and loopback TCP). Anything else running is counted
# too: each round first samples the machine idle for 2 s ("bg", busy ms per
# second) and takes that rate times each run's length off the run, which
# helps only if the other load is steady; run it on a quiet machine. In
# scenario c the direct run also counts smtp-sink, which c does not use, so
# c's figures are a little low.
#
# Everything listens on 127.0.0.1 only; everything started is stopped on exit.
# Needs root for the private Postfix instance (it drops to user postfix).
set -euo pipefail

ROUNDS=3
INSTALL=0
SCENARIOS="a b c"
TIMEOUT=600 # seconds, per smtp-source run and per wait for the sink
while [ $# -gt 0 ]; do
	case "$1" in
	--install) INSTALL=1 ;;
	--rounds) ROUNDS="$2"; shift ;;
	--scenarios) SCENARIOS="$2"; shift ;;
	-h | --help) sed -n '2,28p' "$0"; exit 0 ;;
	*) echo "compare-postfix: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
[ "$ROUNDS" -ge 1 ] 2>/dev/null || { echo "compare-postfix: --rounds wants a number" >&2; exit 2; }

if [ "$INSTALL" = 1 ]; then
	# "No configuration": Debian writes no main.cf and starts nothing, so
	# the system instance stays off and port 25 stays closed.
	printf '%s\n' \
		"postfix postfix/main_mailer_type select No configuration" \
		"postfix postfix/mailname string relaybench.localhost" | debconf-set-selections
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postfix >/dev/null
fi
for tool in postfix smtp-source smtp-sink postconf go; do
	command -v "$tool" >/dev/null || { echo "compare-postfix: $tool not found (try --install)" >&2; exit 1; }
done

REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d /tmp/compare-postfix.XXXXXX)
chmod 755 "$WORK"
PFDIRS=()
cleanup() {
	set +e
	for d in "${PFDIRS[@]}"; do postfix -c "$d" stop >/dev/null 2>&1; done
	# Only our own background jobs still running: a PID remembered from an
	# earlier, finished job may belong to someone else by now.
	for p in $(jobs -p); do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "building relayq..." >&2
(cd "$REPO" && go build -o "$WORK/relayq" ./cmd/relayq)

# free_port prints a loopback port nothing answers on.
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
	done
}

# wait_port PORT: until something accepts on 127.0.0.1:PORT (30 s at most).
wait_port() {
	local i
	for i in $(seq 300); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	echo "compare-postfix: nothing listens on 127.0.0.1:$1" >&2
	return 1
}

now() { date +%s.%N; }

# busy_ms: the machine's busy CPU time since boot, in milliseconds.
HZ=$(getconf CLK_TCK)
busy_ms() { awk -v hz="$HZ" '$1 == "cpu" { printf "%.0f\n", ($2 + $3 + $4 + $7 + $8 + $9) * 1000 / hz; exit }' /proc/stat; }

# background: the machine's busy ms per second with none of ours running.
background() {
	local b0 b1
	b0=$(busy_ms); sleep 2; b1=$(busy_ms)
	echo $(((b1 - b0) / 2))
}

# start_sink N PORT: smtp-sink that exits after N messages.
start_sink() {
	smtp-sink -u nobody -M "$1" "127.0.0.1:$2" 1024 >/dev/null 2>&1 &
	SINK_PID=$!
	wait_port "$2"
}

# wait_sink: until the sink exits (it has all messages); fails on timeout.
wait_sink() {
	local i
	for i in $(seq $((TIMEOUT * 20))); do
		kill -0 "$SINK_PID" 2>/dev/null || return 0
		sleep 0.05
	done
	kill "$SINK_PID" 2>/dev/null
	echo "compare-postfix: sink did not get every message within ${TIMEOUT}s" >&2
	return 1
}

# start_postfix PORT SINKPORT: a private instance in a fresh directory.
start_postfix() {
	local d="$WORK/postfix-$1"
	mkdir -p "$d/queue" "$d/data"
	cat >"$d/main.cf" <<CF
compatibility_level = 3.6
queue_directory = $d/queue
data_directory = $d/data
myhostname = postfix.relaybench.localhost
mydomain = relaybench.localhost
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mydestination =
mynetworks = 127.0.0.0/8
smtpd_relay_restrictions = permit_mynetworks, reject
relayhost = [127.0.0.1]:$2
smtp_dns_support_level = disabled
smtpd_tls_security_level = none
smtp_tls_security_level = none
alias_maps =
alias_database =
local_recipient_maps =
biff = no
maillog_file = $d/maillog
maillog_file_prefixes = $d
CF
	# Our own smtpd port instead of 25, and no chroot (the chroot would
	# need copies of system files inside the private queue directory).
	awk -v port="$1" '
		/^[a-z]/ && NF >= 8 { if ($1 == "smtp" && $2 == "inet") $1 = "127.0.0.1:" port; $5 = "n" }
		{ print }' /etc/postfix/master.cf >"$d/master.cf"
	postfix -c "$d" set-permissions >/dev/null 2>&1 || true
	postfix -c "$d" check
	postfix -c "$d" start >/dev/null 2>&1 || { echo "compare-postfix: postfix start failed; see $d/maillog" >&2; return 1; }
	PFDIRS+=("$d")
	PF_DIR=$d
	wait_port "$1"
}

stop_postfix() {
	postfix -c "$PF_DIR" stop >/dev/null 2>&1 || true
}

# start_relayq PORT NEXTHOP_PORT INITIAL_DELAY
start_relayq() {
	local d="$WORK/relayq-$1"
	mkdir -p "$d"
	cat >"$d/relayq.yaml" <<CF
submission:
  listen: ["127.0.0.1:$1"]
  max_connections_per_ip: 1000
queue:
  path: $d/queue.db
admin:
  listen: ""
retry:
  initial_delay: $3
  max_delay: $3
  warn_after: 0
delivery:
  routes:
    "*": 127.0.0.1:$2
  tls: none
log:
  level: info
CF
	env -i PATH="$PATH" HOME="$d" "$WORK/relayq" serve --config "$d/relayq.yaml" >"$d/log" 2>&1 &
	RELAYQ_PID=$!
	wait_port "$1"
}

stop_relayq() {
	kill "$RELAYQ_PID" 2>/dev/null || true
	wait "$RELAYQ_PID" 2>/dev/null || true
}

# shape SCENARIO: sets SESS COUNT SIZE DOWN.
shape() {
	case "$1" in
	a) SESS=20 COUNT=10000 SIZE=1024 DOWN=0 ;;
	b) SESS=20 COUNT=5000 SIZE=20480 DOWN=0 ;;
	c) SESS=20 COUNT=10000 SIZE=1024 DOWN=1 ;;
	*) echo "compare-postfix: unknown scenario $1" >&2; exit 2 ;;
	esac
}

# measure TARGET_PORT [direct]: runs smtp-source against it; when DOWN=0
# waits for the sink too. Prints "accepted e2e busy" in msgs/s (e2e "-" when
# DOWN=1) and the machine's busy CPU ms over the run. Straight into
# smtp-sink, the sink quits at its N-th message and smtp-source may then
# report a lost connection: harmless there.
measure() {
	local t0 t1 t2 b0 b1 rc=0
	b0=$(busy_ms)
	t0=$(now)
	timeout "$TIMEOUT" smtp-source -d -s "$SESS" -m "$COUNT" -l "$SIZE" \
		-f bench@src.relaybench.localhost -t sink@dst.relaybench.localhost \
		-M client.relaybench.localhost "127.0.0.1:$1" >/dev/null 2>"$WORK/source.err" || rc=$?
	t1=$(now)
	if [ "$rc" != 0 ] && [ "${2:-}" != direct ]; then
		echo "compare-postfix: smtp-source exited $rc: $(tail -1 "$WORK/source.err")" >&2
	fi
	if [ "$DOWN" = 1 ] && [ "${2:-}" != direct ]; then
		b1=$(busy_ms)
		awk -v n="$COUNT" -v a="$t0" -v b="$t1" -v u="$((b1 - b0))" -v bg="$BG" \
			'BEGIN { printf "%.0f - %.0f\n", n / (b - a), u - bg * (b - a) }'
		return
	fi
	wait_sink
	t2=$(now)
	b1=$(busy_ms)
	awk -v n="$COUNT" -v a="$t0" -v b="$t1" -v c="$t2" -v u="$((b1 - b0))" -v bg="$BG" \
		'BEGIN { printf "%.0f %.0f %.0f\n", n / (b - a), n / (c - a), u - bg * (c - a) }'
}

# cpu_per_msg BUSY DIRECT_BUSY: a relay's CPU ms per message.
cpu_per_msg() { awk -v a="$1" -v d="$2" -v n="$COUNT" 'BEGIN { printf "%.3f", (a - d) / n }'; }

# stats: min median max of the numbers on stdin.
stats() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) { print "- - -"; exit } printf "%s %s %s\n", v[1], v[int((NR + 1) / 2)], v[NR] }'; }

echo "compare-postfix: $(date -u '+%Y-%m-%d %H:%M UTC'); nproc $(nproc); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(postconf -d mail_version 2>/dev/null)"
for sc in $SCENARIOS; do
	shape "$sc"
	metric=e2e
	[ "$DOWN" = 1 ] && metric=accepted
	echo
	echo "scenario $sc: $SESS sessions x $SIZE B x $COUNT msgs$([ "$DOWN" = 1 ] && echo ', next hop down (accept-only)'); rates in msgs/s ($metric); CPU in ms per message (machine busy time; a relay's minus its round's direct run)"
	printf '%-6s %10s %10s %10s %14s %12s | %6s %9s %9s %9s %8s\n' round direct postfix relayq relayq/postfix relayq/direct \
		bg "cpu:dir" postfix relayq rq/pf
	for k in direct pf rq ratio frac bg cdir cpf crq cratio; do : >"$WORK/$sc.$k"; done
	for r in $(seq "$ROUNDS"); do
		BG=$(background)
		# The direct run: the ceiling (not in c) and the load tools' own CPU.
		sp=$(free_port); start_sink "$COUNT" "$sp"
		m=$(measure "$sp" direct)
		d="-"
		if [ "$DOWN" = 0 ]; then
			d=$(echo "$m" | awk '{ print $2 }')
			echo "$d" >>"$WORK/$sc.direct"
		fi
		dbusy=$(echo "$m" | awk '{ print $3 }')
		# Postfix
		sp=$(free_port); pp=$(free_port)
		[ "$DOWN" = 0 ] && start_sink "$COUNT" "$sp"
		start_postfix "$pp" "$sp"
		m=$(measure "$pp")
		stop_postfix
		read -r acc e2e pbusy <<<"$m"
		if [ "$DOWN" = 1 ]; then p=$acc; else p=$e2e; fi
		# relayq
		sp=$(free_port); rp=$(free_port)
		[ "$DOWN" = 0 ] && start_sink "$COUNT" "$sp"
		if [ "$DOWN" = 1 ]; then start_relayq "$rp" "$sp" 1h; else start_relayq "$rp" "$sp" 2s; fi
		m=$(measure "$rp")
		stop_relayq
		read -r acc e2e qbusy <<<"$m"
		if [ "$DOWN" = 1 ]; then q=$acc; else q=$e2e; fi
		ratio=$(awk -v a="$q" -v b="$p" 'BEGIN { printf "%.2f", a / b }')
		frac="-"
		[ "$d" != "-" ] && frac=$(awk -v a="$q" -v b="$d" 'BEGIN { printf "%.0f%%", 100 * a / b }')
		cdir=$(cpu_per_msg "$dbusy" 0)
		cpf=$(cpu_per_msg "$pbusy" "$dbusy")
		crq=$(cpu_per_msg "$qbusy" "$dbusy")
		cratio=$(awk -v a="$crq" -v b="$cpf" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }')
		echo "$p" >>"$WORK/$sc.pf"; echo "$q" >>"$WORK/$sc.rq"; echo "$ratio" >>"$WORK/$sc.ratio"
		[ "$frac" != "-" ] && echo "${frac%\%}" >>"$WORK/$sc.frac"
		echo "$BG" >>"$WORK/$sc.bg"; echo "$cdir" >>"$WORK/$sc.cdir"; echo "$cpf" >>"$WORK/$sc.cpf"; echo "$crq" >>"$WORK/$sc.crq"
		[ "$cratio" != "-" ] && echo "$cratio" >>"$WORK/$sc.cratio"
		printf '%-6s %10s %10s %10s %14s %12s | %6s %9s %9s %9s %8s\n' "$r" "$d" "$p" "$q" "${ratio}x" "$frac" "$BG" "$cdir" "$cpf" "$crq" "$cratio"
	done
	for k in direct pf rq ratio frac bg cdir cpf crq cratio; do read -r "min_$k" "med_$k" "max_$k" < <(stats <"$WORK/$sc.$k"); done
	span() { if [ "$1" = - ]; then echo -; else echo "$1-$2${3:-}"; fi; }
	pct() { if [ "$1" = - ]; then echo -; else echo "$1%"; fi; }
	printf '%-6s %10s %10s %10s %14s %12s | %6s %9s %9s %9s %8s\n' median "$med_direct" "$med_pf" "$med_rq" "${med_ratio}x" "$(pct "$med_frac")" \
		"$med_bg" "$med_cdir" "$med_cpf" "$med_crq" "$med_cratio"
	printf '%-6s %10s %10s %10s %14s %12s | %6s %9s %9s %9s %8s\n' min-max "$(span "$min_direct" "$max_direct")" "$(span "$min_pf" "$max_pf")" \
		"$(span "$min_rq" "$max_rq")" "$(span "$min_ratio" "$max_ratio")" "$(span "$min_frac" "$max_frac" %)" \
		"$(span "$min_bg" "$max_bg")" "$(span "$min_cdir" "$max_cdir")" "$(span "$min_cpf" "$max_cpf")" "$(span "$min_crq" "$max_crq")" "$(span "$min_cratio" "$max_cratio")"
done
