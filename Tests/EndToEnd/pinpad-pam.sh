#!/usr/bin/env bash
# Keypad PINs through tokenpind and PAM, for both card applications: an OpenPGP card (the default profile) and a PIV
# card (piv-card) behind the virtual pinpad "tokenpin pinpad 0" (Simulator/pcscd-sandbox --pinpad), one user bound
# to each through the daemon. pamtester (mode=token, fallback=deny) authenticates with the card PIN on the keypad:
# right, wrong (counted on the card), CANCEL and TIMEOUT (failures that count nothing), each announced as a PAM
# information message with the card's tries left, never a secret prompt. The admin PIN (key generation, OpenPGP)
# and the PUK (unblock, PIV) on the keypad through the daemon arrive as its keypadEntry event.
. "$(dirname "$0")/lib.sh"

SIM=${TOKENPIN_SIM_BIN:-$BIN/tokenpin-sim}
enter_sandbox --pinpad pamtester
trap 'stop_sim; cleanup' EXIT
if [ ! -f "$PAM_MODULE" ]; then make -C "$ROOT" -s pam >/dev/null || { echo "cannot build the PAM module"; exit 1; }; fi

# told TEXT: the PAM conversation (pamtester's output) showed TEXT.
told() { grep -q "$1" "$WORK/out" "$WORK/err"; }

start_daemon || exit 1
pam_service SERVICE "auth required $PAM_MODULE socket=$SOCKET timeout=60 mode=token fallback=deny" \
    "account required pam_permit.so" || { echo "cannot write a PAM service"; exit 1; }

# pam_cases NAME USER: right, wrong, CANCEL, TIMEOUT and right again through pamtester, the card PIN 123456.
pam_cases() {
    local name=$1 user=$2 message="Enter the card PIN on the keypad of $READER"
    auth() { pamtester "$SERVICE" "$user" authenticate </dev/null; }
    keypad 123456
    expect_code "$name: PAM, the right card PIN on the keypad authenticates" 0 auth
    check "$name: ... told as information with the tries left" told "$message (3 tries left)"
    check "$name: ... and no secret prompt asked" bash -c "! grep -qi 'card pin for' '$WORK/out' '$WORK/err'"
    keypad 000000
    expect_code "$name: PAM, a wrong card PIN on the keypad fails" 1 auth
    keypad CANCEL
    expect_code "$name: PAM, CANCEL on the keypad fails" 1 auth
    check "$name: ... the wrong PIN was counted on the card" told "$message (2 tries left)"
    keypad TIMEOUT
    expect_code "$name: PAM, a keypad TIMEOUT fails" 1 auth
    check "$name: ... CANCEL counted nothing" told "$message (2 tries left)"
    keypad 123456
    expect_code "$name: PAM, the right card PIN again authenticates" 0 auth
    check "$name: ... TIMEOUT counted nothing" told "$message (2 tries left)"
    check "$name: ... every scripted entry was taken on the keypad" test "$(entries_left)" = 0
}

# OpenPGP: the key generated through the daemon with the admin PIN on the keypad (PIN and card PIN at the keyboard).
start_sim "$WORK/openpgp.json" 0C0FFEE7 --reset || { not_ok "openpgp: the card is inserted"; finish; exit $?; }
new_user OPENPGP || { echo "cannot create users"; exit 1; }
client --user "$OPENPGP" enrol < <(printf '482916\n482916\n') >/dev/null 2>&1
keypad 12345678
expect_code "openpgp: through tokenpind, --generate-key with the admin PIN on the keypad" 0 \
    client --user "$OPENPGP" toggle token on --generate-key --yes < <(printf '482916\n123456\n')
check "openpgp: ... the admin PIN's keypad message came as an event" \
    grep -q "Enter the admin PIN on the keypad of $READER" "$WORK/err"
check "openpgp: ... the keypad took it" test "$(entries_left)" = 0
pam_cases openpgp "$OPENPGP"
stop_sim

# PIV: bound through the daemon (PIN, card PIN, management key at the keyboard), then unblocked with the PUK on the
# keypad through it.
start_sim "$WORK/piv.json" 0C0FFEE8 --reset --profile piv-card || { not_ok "piv: the card is inserted"; finish; exit $?; }
new_user PIV || { echo "cannot create users"; exit 1; }
client --user "$PIV" enrol < <(printf '482916\n482916\n') >/dev/null 2>&1
expect_code "piv: through tokenpind, bind a generated key" 0 client --user "$PIV" toggle token on --app piv \
    --generate-key --yes < <(printf '482916\n123456\n010203040506070801020304050607080102030405060708\n')
keypad 12345678 123456 123456
expect_code "piv: through tokenpind, unblock with the PUK and the new PIN on the keypad" 0 \
    client --user "$PIV" token unblock </dev/null
check "piv: ... the PUK's keypad message came as an event" \
    grep -q "Enter the PUK on the keypad of $READER, then the new card PIN twice" "$WORK/err"
check "piv: ... the keypad took all three entries" test "$(entries_left)" = 0
pam_cases piv "$PIV"
stop_sim

check "no PIN, admin PIN or PUK in the daemon log" bash -c "! grep -qE '482916|123456|12345678' '$WORK/daemon.log'"
stop_daemon
finish
