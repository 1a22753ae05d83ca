#!/usr/bin/env bash
# A wedged reader under a PAM login: tokenpind with the PC/SC readers of a private pcscd (Simulator/pcscd-sandbox),
# the bound card in a vpcd reader, pamtester answering the prompts. The card stops answering mid-command (`stall`,
# OpenPGP) or answers after the deadline (`late`, PIV): the login falls back to the PIN once the reader's deadline
# (`card-timeout`, 3 s here; the default is 10 s) has passed, nothing is counted, the daemon goes on serving, a second login meets
# the still-wedged reader at once, and the card works again once it is pulled and put back. The time to the fallback
# is printed: the figure for a PAM login on a wedged reader (without a deadline it waits as long as the reader does).
. "$(dirname "$0")/lib.sh"

SIM=${TOKENPIN_SIM_BIN:-$BIN/tokenpin-sim}
if [ "${TOKENPIN_SANDBOX:-}" != 1 ]; then
    if ! command -v pcscd >/dev/null || ! command -v pamtester >/dev/null || [ ! -x "$SIM" ] \
        || ! ls /usr/lib/pcsc/drivers/serial/libifdvpcd.so* >/dev/null 2>&1; then
        echo "skipped: needs pcscd, vsmartcard-vpcd, pamtester and tokenpin-sim"; finish; exit $?
    fi
    trap - EXIT; rm -rf "$WORK"
    exec "$ROOT/Simulator/pcscd-sandbox" -- bash "$0"
fi
trap 'stop_sim; cleanup' EXIT

if [ ! -f "$PAM_MODULE" ]; then make -C "$ROOT" -s pam >/dev/null || { echo "cannot build the PAM module"; exit 1; }; fi
# A deadline shorter than the default 10 s keeps the suite short; nothing checked here depends on its length.
printf 'reader = %s\ncard-timeout = 3\n' "$READER" >> "$CONFIG"
start_daemon || exit 1
# The module waits up to a minute for the daemon: longer than the card's deadline, so the deadline is what ends it.
MODULE="$PAM_MODULE socket=$SOCKET timeout=60"
pam_service EITHER "auth required $MODULE" "account required pam_permit.so"
auth() { pamtester "$EITHER" "$1" authenticate; }
seconds() { date +%s.%N; }

# run NAME PROFILE FAULT BIND-INPUT BIND-ARGS...: one user, one card of PROFILE bound through the daemon, then the
# card back in with FAULT on the bound key's command.
run() {
    local name=$1 profile=$2 fault=$3 bind_input=$4 user state=$WORK/$1.json start elapsed
    shift 4
    new_user user || { not_ok "$name: a user"; return; }
    tp() { "$BIN/tokenpin" --socket "$SOCKET" --user "$user" "$@"; }
    start_sim "$state" 0C0FFEE5 --reset --profile "$profile" || { not_ok "$name: the card is inserted"; return; }
    tp enrol --pin-stdin < <(printf '482916\n482916\n') >/dev/null
    expect_code "$name: the card is bound through the daemon" 0 tp toggle token on "$@" --pin-stdin <<<"$bind_input"
    expect_code "$name: the card PIN logs in" 0 auth "$user" <<<123456

    stop_sim
    start_sim "$state" 0C0FFEE5 --profile "$profile" --fault "$fault" || { not_ok "$name: the card is back"; return; }
    start=$(seconds)
    expect_code "$name: the login falls back to the PIN once the reader's deadline passed" 0 auth "$user" \
        < <(printf '123456\n482916\n')
    elapsed=$(echo "$(seconds) - $start" | bc)
    check "$name: ... saying the reader did not answer within 3 s" grep -q "did not answer within 3 s" "$WORK/out" "$WORK/err"
    check "$name: ... after the deadline, not before and not much after (${elapsed} s)" \
        bash -c "echo '$elapsed >= 3 && $elapsed < 9' | bc | grep -q 1"
    echo "# $name: a PAM login on a wedged reader falls back to the PIN after ${elapsed} s (card-timeout 3 s)"
    check "$name: nothing was counted" test "$(tp --json status | json_field remaining)" = 5
    start=$(seconds)
    if [[ $fault == stall* ]]; then
        # The reader still owes its answer: the card is not even asked for, so the login asks the PIN alone.
        expect_code "$name: the daemon goes on: the next login falls back at once" 0 auth "$user" <<<482916
        elapsed=$(echo "$(seconds) - $start" | bc)
        check "$name: ... without waiting for the reader again (${elapsed} s)" bash -c "echo '$elapsed < 5' | bc | grep -q 1"
        echo "# $name: the next login, the reader still owing its answer: fallback after ${elapsed} s"
    else
        # The late answer comes 5 s after the command; the daemon's thread takes it, resets the card and lets the
        # reader go: the next login is the card's again.
        sleep 3
        expect_code "$name: once the late answer came, the card logs in again (the answer unused)" 0 auth "$user" \
            <<<123456
        check "$name: ... by the card" bash -c "! grep -q 'tokenpin PIN for' '$WORK/out' '$WORK/err'"
    fi
    check "$name: still nothing counted" test "$(tp --json status | json_field remaining)" = 5
    # The card is pulled and put back (its late answer, if any, has come): the token logs in again.
    stop_sim
    start_sim "$state" 0C0FFEE5 --profile "$profile" || { not_ok "$name: the card is back"; return; }
    local ok=1
    for _ in $(seq 30); do auth "$user" <<<123456 >"$WORK/out" 2>"$WORK/err" && { ok=0; break; }; sleep 1; done
    check "$name: the card logs in again once the reader is free" test "$ok" = 0
    check "$name: the daemon log holds no PIN" bash -c "! grep -qE '482916|123456' '$WORK/daemon.log'"
    stop_sim
}

run openpgp openpgp 'stall@2A*1' $'482916\n123456\n12345678' --generate-key --yes
run piv piv-card 'late:5000@87*1' $'482916\n123456\n010203040506070801020304050607080102030405060708' \
    --app piv --generate-key --yes
stop_daemon
finish
