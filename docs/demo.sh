#!/usr/bin/env bash
# make demo: watch relayq retry a greylisted recipient and bounce a bad one.
#
# Starts fakemx (greylisting for 5s without naming the wait, and 550 for
# nobody@), starts relayq routed to it, submits two messages over SMTP and
# prints the story from both sides. Everything runs on loopback ports and
# stops when the story is told.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
RELAY_PORT=${RELAY_PORT:-2527}
MX_PORT=${MX_PORT:-2528}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

"$BIN/fakemx" --listen "127.0.0.1:$MX_PORT" --greylist 5s --greylist-text "Greylisted, please retry later" \
  --reply 'rcpt:nobody@=550 5.1.1 No such user' --record "$work/received.jsonl" >"$work/fakemx.log" 2>&1 &
pids+=($!)

RELAYQ_SUBMISSION_LISTEN="127.0.0.1:$RELAY_PORT" RELAYQ_QUEUE_PATH="$work/queue.db" RELAYQ_ADMIN_LISTEN="" \
RELAYQ_DELIVERY_ROUTES="*=127.0.0.1:$MX_PORT" RELAYQ_DELIVERY_TLS=none RELAYQ_HOSTNAME=relay.demo \
  "$BIN/relayq" serve >"$work/relayq.log" 2>&1 &
pids+=($!)

# Wait (bounded) until both ports answer.
for port in "$MX_PORT" "$RELAY_PORT"; do
  for i in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
    [ "$i" = 100 ] && { echo "port $port never opened"; cat "$work"/*.log; exit 1; }
    sleep 0.1
  done
done

# send FROM TO SUBJECT: one SMTP transaction, reading every reply.
send() {
  exec 3<>"/dev/tcp/127.0.0.1/$RELAY_PORT"
  local line
  reply() { while IFS= read -r line <&3; do [ "${line:3:1}" = "-" ] || break; done; echo "  S: ${line%$'\r'}"; }
  cmd() { printf '%s\r\n' "$1" >&3; echo "  C: $1"; reply; }
  reply
  cmd "EHLO demo.client" >/dev/null
  cmd "MAIL FROM:<$1>"
  cmd "RCPT TO:<$2>"
  cmd "DATA" >/dev/null
  printf 'From: <%s>\r\nTo: <%s>\r\nSubject: %s\r\n\r\nHello from the relayq demo.\r\n.\r\n' "$1" "$2" "$3" >&3
  reply
  cmd "QUIT" >/dev/null
  exec 3>&-
}

echo "== Submitting two messages to relayq on 127.0.0.1:$RELAY_PORT"
send app@demo.example alice@example.test "greylisted, then delivered"
send app@demo.example nobody@example.test "bounced"

echo "== Waiting for delivery (about 10 seconds)..."
for i in $(seq 1 300); do
  n=$(grep -c '"from"' "$work/received.jsonl" 2>/dev/null || true)
  [ "${n:-0}" -ge 2 ] && break   # alice's message and the DSN for nobody@
  sleep 0.1
done

echo
echo "== What the fake MX saw (fakemx)"
grep -E ' (rcpt|data) ' "$work/fakemx.log" | sed 's/^/  /'
echo
echo "== What relayq did (one line per recipient per attempt)"
grep -E 'msg=delivery|sending a bounce' "$work/relayq.log" | sed -E 's/^time=[^ ]+ //; s/^/  /'
echo
echo "== Messages the MX accepted"
sed -E 's/,"message":.*$/, "message": …}/' "$work/received.jsonl" | sed 's/^/  /'
