#!/usr/bin/env bash
# pcscd restarted under a running tokenpind. tokenpind keeps its PC/SC contexts for the next card connection
# (PCSCContextPool); they die with the pcscd that made them, and pcsc-lite's client only learns it at the next call.
# The next verification must still reach the card, through a new context, spending nothing on the way: no PIN try,
# no card PIN try. A private pcscd (Simulator/pcscd-sandbox) with the simulated card in its first reader.
. "$(dirname "$0")/lib.sh"

enter_sandbox
SIM=${TOKENPIN_SIM_BIN:-$BIN/tokenpin-sim}
start_sim "$WORK/card.json" 0000CAFE || { echo "the simulated card did not come up"; exit 1; }
printf 'reader = %s\n' "$READER" >> "$CONFIG"
start_daemon || exit 1
tp() { client --pin-stdin "$@"; }
expect_code "enrol through tokenpind" 0 tp enrol < <(printf '482916\n482916\n')
expect_code "... bind the card" 0 tp toggle token on --generate-key --yes < <(printf '482916\n123456\n12345678\n')
expect_code "a verification by token before the restart" 0 tp verify --method token <<<123456
expect_code "... and the status (its reader listing keeps a context too)" 0 client status

PCSCD_CONFIG="$TOKENPIN_SANDBOX_DIR/reader.conf.d"
OLD_PCSCD=$(pgrep -f "^pcscd -f -c $PCSCD_CONFIG")
check "the sandbox's pcscd runs (pid $OLD_PCSCD)" test -n "$OLD_PCSCD"
kill -TERM $OLD_PCSCD
for _ in $(seq 100); do kill -0 "$OLD_PCSCD" 2>/dev/null || break; sleep 0.05; done
check "... and is stopped" bash -c "! kill -0 $OLD_PCSCD 2>/dev/null"
# While no pcscd runs: the kept contexts are dead and no new one can be made; the token is unavailable, said so,
# and nothing is counted.
expect_code "a verification by token without pcscd: the service is unavailable (69)" 69 tp verify --method token <<<123456
check "... saying pcscd is not running" grep -q "pcscd, the smart card service, is not running" "$WORK/out"
expect_code "... and the status still answers" 0 client status
pcscd -f -c "$PCSCD_CONFIG" >"$WORK/pcscd.log" 2>&1 &
PCSCD_PID=$!
trap 'stop_sim; kill "$PCSCD_PID" 2>/dev/null; wait "$PCSCD_PID" 2>/dev/null; cleanup' EXIT
for _ in $(seq 200); do card_present && break; sleep 0.05; done
check "a new pcscd sees the card again" card_present

expect_code "a verification by token after the restart" 0 tp verify --method token <<<123456
expect_code "... and the next one" 0 tp verify --method token <<<123456
client status --json >"$WORK/status.json" 2>"$WORK/err"
check "no PIN try was spent" test "$(json_field remaining <"$WORK/status.json")" = 5
check "no card PIN try was spent" test "$(json_field token.cardTriesLeft <"$WORK/status.json")" = 3
finish
