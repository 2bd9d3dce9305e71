#!/usr/bin/env bash
# make demo: watch relayq retry a greylisted recipient and bounce a bad one.
#
# Starts fakemx (greylisting every new sender/recipient pair for 5s without
# naming the wait, and 550 for nobody@), starts relayq routed to it with
# its default backoff (retry.initial_delay 2s, multiplier 2; no jitter, so
# that the waits read 2s and 4s), submits two messages over SMTP and prints
# the story from both sides. Everything runs on loopback ports (RELAY_PORT,
# MX_PORT) in a temporary directory and stops when the story is told;
# e2e/demo_test.go runs it and checks what it prints.
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
RELAYQ_RETRY_JITTER=0s \
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

# send FROM TO SUBJECT: one SMTP transaction, reading every reply; prints
# the recipient and the relay's last reply.
send() {
  exec 3<>"/dev/tcp/127.0.0.1/$RELAY_PORT"
  local line
  reply() { while IFS= read -r line <&3; do [ "${line:3:1}" = "-" ] || break; done; }
  cmd() { printf '%s\r\n' "$1" >&3; reply; }
  reply
  cmd "EHLO demo.client"
  cmd "MAIL FROM:<$1>"
  cmd "RCPT TO:<$2>"
  cmd "DATA"
  printf 'From: <%s>\r\nTo: <%s>\r\nSubject: %s\r\n\r\nHello from the relayq demo.\r\n.\r\n' "$1" "$2" "$3" >&3
  reply
  echo "  $2: ${line%$'\r'}"
  cmd "QUIT"
  exec 3>&-
}

echo "== Submitting two messages to relayq on 127.0.0.1:$RELAY_PORT"
send app@demo.example alice@example.test "greylisted, then delivered"
send app@demo.example nobody@example.test "bounced"

# The story ends when fakemx has accepted two messages: alice's, and the
# report relayq sends app@ for nobody@ (greylisted too). Both need three
# attempts: at 0s, 2s and 6s.
echo "== Waiting for the retries (about 7 seconds)..."
for i in $(seq 1 300); do
  n=$(grep -c '"type":"message"' "$work/received.jsonl" 2>/dev/null || true)
  [ "${n:-0}" -ge 2 ] && break
  [ "$i" = 300 ] && { echo "the story did not end within 30 seconds:"; cat "$work"/*.log; exit 1; }
  sleep 0.1
done

echo
echo "== What the fake MX answered (fakemx)"
grep -E ' (rcpt|data) ' "$work/fakemx.log" | sed -E 's/^[0-9-]+T([0-9:.]+)Z? [^ ]+ /\1 /; s/^/  /'
echo
echo "== What relayq did (one line per recipient per attempt; retries after 2s, then 4s)"
grep -E 'msg=delivery|msg="sending a bounce"' "$work/relayq.log" |
  sed -E 's/^time=[0-9-]+T([0-9:.]+)[^ ]* level=[A-Z]+ /\1 /; s/ (hop|delay|tls|tls_version)=[^ ]+//g; s/^/  /'
echo
echo "== Messages the MX accepted"
grep '"type":"message"' "$work/received.jsonl" | while IFS= read -r rec; do
  from=$(sed -E 's/.*"from":"([^"]*)".*/\1/' <<<"$rec")
  to=$(sed -E 's/.*"to":\["([^"]*)".*/\1/' <<<"$rec")
  echo "  from <$from> to <$to>:"
  sed -E 's/.*"message":"(.*)"\}$/\1/; s/\\r\\n/\n/g; s/\\u003c/</g; s/\\u003e/>/g; s/\\"/"/g' <<<"$rec" |
    awk '/^Subject:/ && !s { s = 1; print "    " $0 }
         /^(Content-Type: multipart\/report|Final-Recipient:|Action:|Status:|Diagnostic-Code:)/ { print "    " $0 }'
done
