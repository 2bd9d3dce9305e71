#!/usr/bin/env bash
# compare-postfix.sh: relayq against Postfix, side by side, with Postfix's own
# load generator (smtp-source) and sink (smtp-sink) for both, so neither relay
# is measured by relayq's tools alone.
#
#   bench/compare-postfix.sh [--install] [--rounds N] [--scenarios "a b c"]
#                            [--profile bare|production|production-ed25519]
#                            [--count N]  (messages per run instead of the
#                                          scenario's, for a quick check)
#
# Profiles (docs/performance.md): bare = both relays as installed, nothing
# signed. production = as deployed: both sign every message with the same
# RSA-2048 key (relayq natively; Postfix through OpenDKIM as an
# smtpd_milters milter, Mode s, relaxed/relaxed, the same header list,
# From oversigned by both), relayq with events and history on (default
# retention), one webhook to a local receiver answering 200 (relaybench
# webhook-sink) and the built-in shaping rules. production-ed25519 = the
# same, but relayq signs with Ed25519 while Postfix+OpenDKIM still signs
# RSA-2048 (OpenDKIM 2.11 has no Ed25519): not like for like, labelled so.
# Before the rounds, a signed profile sends a sample (10 x 1 KiB, 10 x
# 20 KiB) through each relay into a dumping smtp-sink and verifies every
# signature with dkimpy (bench/verify-dkim.py); one failure stops the run.
#
# Scenarios: a = 20 sessions x 1 KiB x 10,000; b = 20 x 20 KiB x 5,000;
# c = accept-only, 20 x 1 KiB x 10,000 with the next hop down.
# Each round runs the direct ceiling (smtp-source -> smtp-sink), then Postfix,
# then relayq (P R P R ...), each relay on a fresh, empty queue. End to end is
# messages / (start of smtp-source .. smtp-sink has counted all of them,
# smtp-sink -M N exits then); accepted is messages / smtp-source's run time.
# smtp-source runs with -d (connections reused, one message per transaction).
#
# own ms/msg: the CPU time of the relay's own processes alone, from a
# cpuacct cgroup per relay (cgroup v1, /sys/fs/cgroup/cpuacct): Postfix's
# master and every process it starts, plus OpenDKIM; relayq plus its
# webhook receiver. Other load on the machine does not count, nor does
# kernel work done outside those processes (the journal thread, some of
# loopback's softirqs), so it is lower than CPU ms/msg and is the figure to
# trust on a busy machine; "-" where the cgroup cannot be made.
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
# Needs root for the private Postfix instance (it drops to user postfix)
# and for OpenDKIM (it reads the key from a 0700 directory).
set -euo pipefail

ROUNDS=3
INSTALL=0
SCENARIOS="a b c"
PROFILE=bare
COUNT_OVERRIDE=
TIMEOUT=600 # seconds, per smtp-source run and per wait for the sink
while [ $# -gt 0 ]; do
	case "$1" in
	--install) INSTALL=1 ;;
	--rounds) ROUNDS="$2"; shift ;;
	--scenarios) SCENARIOS="$2"; shift ;;
	--profile) PROFILE="$2"; shift ;;
	--count) COUNT_OVERRIDE="$2"; shift ;;
	-h | --help) sed -n '2,44p' "$0"; exit 0 ;;
	*) echo "compare-postfix: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
[ "$ROUNDS" -ge 1 ] 2>/dev/null || { echo "compare-postfix: --rounds wants a number" >&2; exit 2; }
[ -z "$COUNT_OVERRIDE" ] || [ "$COUNT_OVERRIDE" -ge 1 ] 2>/dev/null || { echo "compare-postfix: --count wants a number" >&2; exit 2; }
case "$PROFILE" in
bare) SIGNED=0 ;;
production | production-ed25519) SIGNED=1 ;;
*) echo "compare-postfix: --profile wants bare, production or production-ed25519, not $PROFILE" >&2; exit 2 ;;
esac

if [ "$INSTALL" = 1 ]; then
	# "No configuration": Debian writes no main.cf and starts nothing, so
	# the system instance stays off and port 25 stays closed.
	printf '%s\n' \
		"postfix postfix/main_mailer_type select No configuration" \
		"postfix postfix/mailname string relaybench.localhost" | debconf-set-selections
	apt-get update -qq
	pkgs=postfix
	[ "$SIGNED" = 1 ] && pkgs="postfix opendkim python3-dkim"
	# shellcheck disable=SC2086 # a list of package names
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $pkgs >/dev/null
fi
tools="postfix smtp-source smtp-sink postconf go"
[ "$SIGNED" = 1 ] && tools="$tools opendkim"
for tool in $tools; do
	command -v "$tool" >/dev/null || { echo "compare-postfix: $tool not found (try --install)" >&2; exit 1; }
done
# dkimpy from Debian's python3-dkim, for /usr/bin/python3 (a python3 earlier
# on PATH may be another installation without it).
if [ "$SIGNED" = 1 ] && ! /usr/bin/python3 -c 'import dkim' 2>/dev/null; then
	echo "compare-postfix: /usr/bin/python3 cannot import dkim (python3-dkim; try --install)" >&2
	exit 1
fi

REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d /tmp/compare-postfix.XXXXXX)
chmod 755 "$WORK"
PFDIRS=()
CGROUPS=()
cleanup() {
	set +e
	for d in "${PFDIRS[@]}"; do postfix -c "$d" stop >/dev/null 2>&1; done
	# A cgroup can be removed once its processes are gone. Postfix's
	# daemons may take several seconds after `postfix stop`: any still
	# there go back to the root group they came from.
	for c in "${CGROUPS[@]}"; do
		for _ in $(seq 50); do rmdir "$c" 2>/dev/null && break; sleep 0.1; done
		[ -d "$c" ] || continue
		while read -r p; do echo "$p" >"$CGROOT/tasks"; done <"$c/tasks"
		rmdir "$c"
	done
	# Only our own background jobs still running: a PID remembered from an
	# earlier, finished job may belong to someone else by now.
	for p in $(jobs -p); do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "building relayq..." >&2
(cd "$REPO" && go build -o "$WORK/" ./cmd/relayq ./bench/relaybench)

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

# cgroups for "own" CPU: CG_pf and CG_rq, empty when not possible here.
CGROOT=/sys/fs/cgroup/cpuacct
CG_pf= CG_rq= CG_none=
for k in pf rq; do
	c="$CGROOT/compare-postfix-$$-$k"
	if mkdir "$c" 2>/dev/null; then
		CGROUPS+=("$c")
		printf -v "CG_$k" '%s' "$c"
	fi
done
# cg_join K: moves the calling (sub)shell into relay K's cgroup; used as
# `( cg_join K; exec CMD ) &`, so that $! is CMD's own PID and CMD and
# every process it starts are counted.
cg_join() {
	local c="CG_$1"
	[ -z "${!c}" ] || echo "$BASHPID" >"${!c}/tasks"
}
# own_ms K: CPU ms relay K's cgroup has used so far, or 0.
own_ms() {
	local c="CG_$1"
	if [ -n "${!c}" ]; then awk '{ printf "%.0f\n", $1 / 1e6 }' "${!c}/cpuacct.usage"; else echo 0; fi
}

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
	# A dead milter must not let unsigned mail through: tempfail.
	[ "$SIGNED" = 1 ] && cat >>"$d/main.cf" <<CF
smtpd_milters = inet:127.0.0.1:$MILTER_PORT
milter_default_action = tempfail
milter_protocol = 6
CF
	# Our own smtpd port instead of 25, and no chroot (the chroot would
	# need copies of system files inside the private queue directory).
	awk -v port="$1" '
		/^[a-z]/ && NF >= 8 { if ($1 == "smtp" && $2 == "inet") $1 = "127.0.0.1:" port; $5 = "n" }
		{ print }' /etc/postfix/master.cf >"$d/master.cf"
	postfix -c "$d" set-permissions >/dev/null 2>&1 || true
	postfix -c "$d" check
	(cg_join pf; exec postfix -c "$d" start) >/dev/null 2>&1 || { echo "compare-postfix: postfix start failed; see $d/maillog" >&2; return 1; }
	PFDIRS+=("$d")
	PF_DIR=$d
	wait_port "$1"
}

stop_postfix() {
	postfix -c "$PF_DIR" stop >/dev/null 2>&1 || true
}

# The signing set-up of the production profiles. Both relays sign d=FROM_DOMAIN
# (smtp-source's From: is bench@$FROM_DOMAIN) with these header fields when
# present, which are relayq's default list (internal/dkim DefaultHeaders),
# From once more than it occurs.
FROM_DOMAIN=src.relaybench.localhost
SIGN_HEADERS="From,Reply-To,Sender,Subject,Date,Message-ID,To,Cc,MIME-Version,Content-Type,Content-Transfer-Encoding,Content-ID,Content-Description,Resent-Date,Resent-From,Resent-Sender,Resent-To,Resent-Cc,Resent-Message-ID,In-Reply-To,References,List-Id,List-Help,List-Unsubscribe,List-Unsubscribe-Post,List-Subscribe,List-Post,List-Owner,List-Archive,Feedback-ID"
# 0700; OpenDKIM still calls a key under /tmp unsafe (it checks every
# parent directory), hence RequireSafeKeys false below.
KEYS=$WORK/keys
RECORDS=$KEYS/records # "NAME VALUE" per key, what DNS would publish

# make_key SELECTOR TYPE: a key file KEYS/SELECTOR.pem, its record in RECORDS.
make_key() {
	local out line
	out=$("$WORK/relayq" dkim keygen --domain "$FROM_DOMAIN" --selector "$1" --type "$2" --out "$KEYS/$1.pem")
	line=$(echo "$out" | grep ' IN TXT ')
	# NAME. IN TXT "part" "part": the value is the parts joined.
	echo "${line%% *} $(echo "${line#* IN TXT }" | sed 's/^"//; s/"$//; s/" "//g')" >>"$RECORDS"
}

# start_opendkim: OpenDKIM as a signing milter with the RSA key; sets
# MILTER_PORT. One instance serves every Postfix of the run.
start_opendkim() {
	local d="$WORK/opendkim"
	mkdir -p "$d"
	MILTER_PORT=$(free_port)
	cat >"$d/opendkim.conf" <<CF
Mode s
Canonicalization relaxed/relaxed
SignatureAlgorithm rsa-sha256
Domain $FROM_DOMAIN
Selector rsa1
KeyFile $KEYS/rsa1.pem
RequireSafeKeys false
SignHeaders $SIGN_HEADERS
OversignHeaders From
InternalHosts 127.0.0.1
Socket inet:$MILTER_PORT@127.0.0.1
Syslog no
Background no
UserID root
PidFile $d/opendkim.pid
CF
	(cg_join pf; exec opendkim -x "$d/opendkim.conf" -f) >"$d/log" 2>&1 &
	wait_port "$MILTER_PORT" || { cat "$d/log" >&2; return 1; }
}

# start_hook: the webhook receiver for one relayq run; sets HOOK_URL.
start_hook() {
	(cg_join rq; exec "$WORK/relaybench" webhook-sink) >"$WORK/hook.out" 2>&1 &
	HOOK_PID=$!
	local i
	for i in $(seq 100); do
		HOOK_URL=$(head -1 "$WORK/hook.out")
		case "$HOOK_URL" in http://*) return 0 ;; esac
		sleep 0.1
	done
	echo "compare-postfix: webhook-sink did not start: $(cat "$WORK/hook.out")" >&2
	return 1
}

# hook_events: how many events the receiver has got so far.
hook_events() { awk '$1 == "batches" { n = $4 } END { print n + 0 }' "$WORK/hook.out"; }

# wait_hook N: until the receiver has N events, 30 s at most (the relay
# posts after the fact; a run is not measured while it catches up).
wait_hook() {
	local i
	for i in $(seq 300); do
		[ "$(hook_events)" -ge "$1" ] && return 0
		sleep 0.1
	done
	return 0
}

# stop_hook: stops the receiver; HOOK_EVENTS is how many events it got.
stop_hook() {
	kill "$HOOK_PID" 2>/dev/null || true
	wait "$HOOK_PID" 2>/dev/null || true
	HOOK_EVENTS=$(hook_events)
}

# signing_yaml: relayq's production sections (after the bare ones).
signing_yaml() {
	local sel=rsa1
	[ "$PROFILE" = production-ed25519 ] && sel=ed1
	cat <<CF
dkim:
  keys:
    - {domain: $FROM_DOMAIN, selector: $sel, private_key_file: "$KEYS/$sel.pem"}
  headers: [$(echo "$SIGN_HEADERS" | sed 's/,/, /g')]
events:
  retention: 168h
  webhooks:
    - {url: "$HOOK_URL", secret: compare-postfix, batch: 100}
shaping:
  builtin: true
CF
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
	if [ "$SIGNED" = 1 ]; then
		start_hook
		signing_yaml >>"$d/relayq.yaml"
	fi
	(cg_join rq; exec env -i PATH="$PATH" HOME="$d" "$WORK/relayq" serve --config "$d/relayq.yaml") >"$d/log" 2>&1 &
	RELAYQ_PID=$!
	wait_port "$1"
}

# stop_relayq [EVENTS]: with a webhook, first waits for EVENTS of them.
stop_relayq() {
	[ "$SIGNED" = 1 ] && [ -n "${1:-}" ] && wait_hook "$1"
	kill "$RELAYQ_PID" 2>/dev/null || true
	wait "$RELAYQ_PID" 2>/dev/null || true
	HOOK_EVENTS=-
	[ "$SIGNED" = 1 ] && stop_hook
	return 0
}

# shape SCENARIO: sets SESS COUNT SIZE DOWN.
shape() {
	case "$1" in
	a) SESS=20 COUNT=10000 SIZE=1024 DOWN=0 ;;
	b) SESS=20 COUNT=5000 SIZE=20480 DOWN=0 ;;
	c) SESS=20 COUNT=10000 SIZE=1024 DOWN=1 ;;
	*) echo "compare-postfix: unknown scenario $1" >&2; exit 2 ;;
	esac
	if [ -n "$COUNT_OVERRIDE" ]; then COUNT=$COUNT_OVERRIDE; fi
}

# measure TARGET_PORT direct|pf|rq: runs smtp-source against it; when
# DOWN=0 waits for the sink too. Prints "accepted e2e busy own": rates in
# msgs/s (e2e "-" when DOWN=1), the machine's busy CPU ms over the run and
# the CPU ms of that relay's cgroup (0 for direct). Straight into
# smtp-sink, the sink quits at its N-th message and smtp-source may then
# report a lost connection: harmless there.
measure() {
	local t0 t1 t2 b0 b1 o0 o1 rc=0 k=$2
	[ "$k" = direct ] && k=none
	b0=$(busy_ms)
	o0=$(own_ms "$k")
	t0=$(now)
	timeout "$TIMEOUT" smtp-source -d -s "$SESS" -m "$COUNT" -l "$SIZE" \
		-f bench@src.relaybench.localhost -t sink@dst.relaybench.localhost \
		-M client.relaybench.localhost "127.0.0.1:$1" >/dev/null 2>"$WORK/source.err" || rc=$?
	t1=$(now)
	if [ "$rc" != 0 ] && [ "$2" != direct ]; then
		echo "compare-postfix: smtp-source exited $rc: $(tail -1 "$WORK/source.err")" >&2
	fi
	if [ "$DOWN" = 1 ] && [ "$2" != direct ]; then
		b1=$(busy_ms)
		o1=$(own_ms "$k")
		awk -v n="$COUNT" -v a="$t0" -v b="$t1" -v u="$((b1 - b0))" -v bg="$BG" -v o="$((o1 - o0))" \
			'BEGIN { printf "%.0f - %.0f %d\n", n / (b - a), u - bg * (b - a), o }'
		return
	fi
	wait_sink
	t2=$(now)
	b1=$(busy_ms)
	o1=$(own_ms "$k")
	awk -v n="$COUNT" -v a="$t0" -v b="$t1" -v c="$t2" -v u="$((b1 - b0))" -v bg="$BG" -v o="$((o1 - o0))" \
		'BEGIN { printf "%.0f %.0f %.0f %d\n", n / (b - a), n / (c - a), u - bg * (c - a), o }'
}

# verify_sample WHO ALGO: sends 10 x 1 KiB and 10 x 20 KiB through a fresh
# relay (WHO: postfix or relayq) into a smtp-sink that dumps every message,
# and checks each signature with dkimpy: all must verify with a=ALGO.
verify_sample() {
	local who=$1 algo=$2 sp rp size dump="$WORK/sample-$1"
	mkdir -p "$dump"
	chown nobody "$dump"
	sp=$(free_port); rp=$(free_port)
	smtp-sink -u nobody -d "$dump/msg." -M 20 "127.0.0.1:$sp" 64 >/dev/null 2>&1 &
	SINK_PID=$!
	wait_port "$sp"
	if [ "$who" = postfix ]; then start_postfix "$rp" "$sp"; else start_relayq "$rp" "$sp" 1s; fi
	for size in 1024 20480; do
		timeout 120 smtp-source -s 2 -m 10 -l "$size" -f "bench@$FROM_DOMAIN" -t sink@dst.relaybench.localhost \
			-M client.relaybench.localhost "127.0.0.1:$rp" >/dev/null 2>"$WORK/source.err" ||
			echo "compare-postfix: sample: smtp-source exited: $(tail -1 "$WORK/source.err")" >&2
	done
	local rc=0
	wait_sink || rc=1
	if [ "$who" = postfix ]; then stop_postfix; else stop_relayq 40; fi
	[ "$rc" = 0 ] || return 1
	if ! /usr/bin/python3 "$REPO/bench/verify-dkim.py" --records "$RECORDS" --algo "$algo" "$dump"/msg.* >"$dump.out"; then
		grep -v '^ok ' "$dump.out" >&2
		echo "compare-postfix: $who: a signature does not verify (dkimpy); nothing measured" >&2
		return 1
	fi
	echo "dkimpy verified $(grep -c '^ok ' "$dump.out") of $who's signed messages ($algo)$([ "$who" = relayq ] && echo "; its webhook receiver got $HOOK_EVENTS events")"
}

# cpu_per_msg BUSY DIRECT_BUSY: a relay's CPU ms per message.
cpu_per_msg() { awk -v a="$1" -v d="$2" -v n="$COUNT" 'BEGIN { printf "%.3f", (a - d) / n }'; }

# stats: min median max of the numbers on stdin.
stats() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) { print "- - -"; exit } printf "%s %s %s\n", v[1], v[int((NR + 1) / 2)], v[NR] }'; }

echo "compare-postfix: $(date -u '+%Y-%m-%d %H:%M UTC'); nproc $(nproc); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(postconf -d mail_version 2>/dev/null)"
case "$PROFILE" in
bare) echo "profile bare: nothing signed; relayq without webhooks" ;;
production) echo "profile production: both sign RSA-2048 rsa-sha256 with one key (relayq natively; Postfix through OpenDKIM $(opendkim -V 2>/dev/null | awk 'NR == 1 { print $NF }') as milter), relaxed/relaxed, same header list; relayq: events+history on, webhook to a local receiver (200), built-in shaping rules" ;;
production-ed25519) echo "profile production-ed25519: NOT like for like: relayq signs Ed25519 (ed25519-sha256), Postfix+OpenDKIM $(opendkim -V 2>/dev/null | awk 'NR == 1 { print $NF }') signs RSA-2048 (rsa-sha256); otherwise as production" ;;
esac
if [ "$SIGNED" = 1 ]; then
	mkdir -m 0700 "$KEYS"
	make_key rsa1 rsa
	RQ_ALGO=rsa-sha256
	if [ "$PROFILE" = production-ed25519 ]; then make_key ed1 ed25519; RQ_ALGO=ed25519-sha256; fi
	start_opendkim
	DOWN=0
	verify_sample postfix rsa-sha256
	verify_sample relayq "$RQ_ALGO"
fi
for sc in $SCENARIOS; do
	shape "$sc"
	metric=e2e
	[ "$DOWN" = 1 ] && metric=accepted
	echo
	echo "scenario $sc: $SESS sessions x $SIZE B x $COUNT msgs$([ "$DOWN" = 1 ] && echo ', next hop down (accept-only)'); rates in msgs/s ($metric); CPU in ms per message (machine busy time; a relay's minus its round's direct run | own: the relay's cgroup)"
	printf '%-6s %10s %10s %10s %14s %12s | %6s %9s %9s %9s %8s | %8s %8s %8s\n' round direct postfix relayq relayq/postfix relayq/direct \
		bg "cpu:dir" postfix relayq rq/pf "own:pf" "own:rq" rq/pf
	for k in direct pf rq ratio frac bg cdir cpf crq cratio opf orq oratio hook; do : >"$WORK/$sc.$k"; done
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
		m=$(measure "$pp" pf)
		stop_postfix
		read -r acc e2e pbusy pown <<<"$m"
		if [ "$DOWN" = 1 ]; then p=$acc; else p=$e2e; fi
		# relayq
		sp=$(free_port); rp=$(free_port)
		[ "$DOWN" = 0 ] && start_sink "$COUNT" "$sp"
		if [ "$DOWN" = 1 ]; then start_relayq "$rp" "$sp" 1h; else start_relayq "$rp" "$sp" 2s; fi
		m=$(measure "$rp" rq)
		# Each message makes two events, queued and delivered; with the
		# next hop down only queued (the first refusal suspends it).
		stop_relayq $(((2 - DOWN) * COUNT))
		if [ "$SIGNED" = 1 ]; then
			[ "${HOOK_EVENTS:-0}" -gt 0 ] || { echo "compare-postfix: relayq's webhook receiver got no events" >&2; exit 1; }
			echo "$HOOK_EVENTS" >>"$WORK/$sc.hook"
		fi
		read -r acc e2e qbusy qown <<<"$m"
		if [ "$DOWN" = 1 ]; then q=$acc; else q=$e2e; fi
		ratio=$(awk -v a="$q" -v b="$p" 'BEGIN { printf "%.2f", a / b }')
		frac="-"
		[ "$d" != "-" ] && frac=$(awk -v a="$q" -v b="$d" 'BEGIN { printf "%.0f%%", 100 * a / b }')
		cdir=$(cpu_per_msg "$dbusy" 0)
		cpf=$(cpu_per_msg "$pbusy" "$dbusy")
		crq=$(cpu_per_msg "$qbusy" "$dbusy")
		cratio=$(awk -v a="$crq" -v b="$cpf" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }')
		opf=- orq=- oratio=-
		if [ -n "$CG_pf" ] && [ -n "$CG_rq" ]; then
			opf=$(cpu_per_msg "$pown" 0); orq=$(cpu_per_msg "$qown" 0)
			oratio=$(awk -v a="$orq" -v b="$opf" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }')
			echo "$opf" >>"$WORK/$sc.opf"; echo "$orq" >>"$WORK/$sc.orq"
			[ "$oratio" != "-" ] && echo "$oratio" >>"$WORK/$sc.oratio"
		fi
		echo "$p" >>"$WORK/$sc.pf"; echo "$q" >>"$WORK/$sc.rq"; echo "$ratio" >>"$WORK/$sc.ratio"
		[ "$frac" != "-" ] && echo "${frac%\%}" >>"$WORK/$sc.frac"
		echo "$BG" >>"$WORK/$sc.bg"; echo "$cdir" >>"$WORK/$sc.cdir"; echo "$cpf" >>"$WORK/$sc.cpf"; echo "$crq" >>"$WORK/$sc.crq"
		[ "$cratio" != "-" ] && echo "$cratio" >>"$WORK/$sc.cratio"
		printf '%-6s %10s %10s %10s %14s %12s | %6s %9s %9s %9s %8s | %8s %8s %8s\n' "$r" "$d" "$p" "$q" "${ratio}x" "$frac" "$BG" "$cdir" "$cpf" "$crq" "$cratio" "$opf" "$orq" "$oratio"
	done
	for k in direct pf rq ratio frac bg cdir cpf crq cratio opf orq oratio; do read -r "min_$k" "med_$k" "max_$k" < <(stats <"$WORK/$sc.$k"); done
	span() { if [ "$1" = - ]; then echo -; else echo "$1-$2${3:-}"; fi; }
	pct() { if [ "$1" = - ]; then echo -; else echo "$1%"; fi; }
	printf '%-6s %10s %10s %10s %14s %12s | %6s %9s %9s %9s %8s | %8s %8s %8s\n' median "$med_direct" "$med_pf" "$med_rq" "${med_ratio}x" "$(pct "$med_frac")" \
		"$med_bg" "$med_cdir" "$med_cpf" "$med_crq" "$med_cratio" "$med_opf" "$med_orq" "$med_oratio"
	printf '%-6s %10s %10s %10s %14s %12s | %6s %9s %9s %9s %8s | %8s %8s %8s\n' min-max "$(span "$min_direct" "$max_direct")" "$(span "$min_pf" "$max_pf")" \
		"$(span "$min_rq" "$max_rq")" "$(span "$min_ratio" "$max_ratio")" "$(span "$min_frac" "$max_frac" %)" \
		"$(span "$min_bg" "$max_bg")" "$(span "$min_cdir" "$max_cdir")" "$(span "$min_cpf" "$max_cpf")" "$(span "$min_crq" "$max_crq")" "$(span "$min_cratio" "$max_cratio")" \
		"$(span "$min_opf" "$max_opf")" "$(span "$min_orq" "$max_orq")" "$(span "$min_oratio" "$max_oratio")"
	if [ "$SIGNED" = 1 ]; then
		echo "events relayq's webhook receiver got, per round: $(tr '\n' ' ' <"$WORK/$sc.hook")"
	fi
done
