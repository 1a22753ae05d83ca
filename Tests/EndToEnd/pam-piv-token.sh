#!/usr/bin/env bash
# A PIV card as the token through tokenpind and PAM: the daemon's simulated card made as a PIV card alone
# (TOKENPIN_SIM_PROFILE=piv-card), bound with `--app piv --generate-key` (the management key prompt relayed),
# pamtester answering the card PIN prompt the daemon relays: success by token, a wrong card PIN falling back to
# the PIN, the card PIN unblocked with the PUK through the daemon (its prompt relayed), and no secret in the log.
. "$(dirname "$0")/lib.sh"

if [ ! -f "$PAM_MODULE" ]; then make -C "$ROOT" -s pam >/dev/null || { echo "cannot build the PAM module"; exit 1; }; fi
command -v pamtester >/dev/null || { echo "pamtester is not installed"; exit 1; }
TOKENPIN_SIM_PROFILE=piv-card start_daemon --reader sim || exit 1
new_user ERIN || { echo "cannot create users"; exit 1; }
MODULE="$PAM_MODULE socket=$SOCKET timeout=10"
pam_service EITHER "auth required $MODULE" "account required pam_permit.so"
tokenpin() { "$BIN/tokenpin" --socket "$SOCKET" --user "$ERIN" "$@"; }
FACTORY=010203040506070801020304050607080102030405060708

tokenpin enrol --pin-stdin < <(printf '482916\n482916\n') >/dev/null
expect_code "toggle token on --app piv --generate-key through the daemon (PIN, card PIN, management key relayed)" 0 \
    tokenpin toggle token on --app piv --generate-key --yes --pin-stdin < <(printf '482916\n123456\n%s\n' "$FACTORY")
check "the binding is a PIV one" bash -c "'$BIN/tokenpin' --socket '$SOCKET' --user '$ERIN' --json status | grep -q 'piv-guid:'"

auth() { pamtester "$1" "$2" authenticate; }
expect_code "PIV token: the card PIN authenticates" 0 auth "$EITHER" "$ERIN" <<<123456
check "PIV token: the prompt names the card and its tries" grep -q "Card PIN for card PIV card" "$WORK/out" "$WORK/err"
expect_code "PIV token: a wrong card PIN falls back to the PIN" 0 auth "$EITHER" "$ERIN" < <(printf '000000\n482916\n')
check "PIV token: the fallback is announced" grep -q "falling back\|Token not used" "$WORK/out" "$WORK/err"
for _ in 1 2; do tokenpin verify --method token --pin-stdin <<<000000 >/dev/null 2>&1; done
expect_code "PIV token: unblock with the PUK through the daemon (PUK, new card PIN twice, relayed)" 0 \
    tokenpin token unblock --pin-stdin < <(printf '12345678\n13572468\n13572468\n')
expect_code "PIV token: the new card PIN authenticates" 0 auth "$EITHER" "$ERIN" <<<13572468
check "the PIN counter was never touched by card failures" test "$(tokenpin --json status | json_field remaining)" = 5
check "no PIN, PUK or management key in the daemon log" \
    bash -c "! grep -qE '482916|123456|000000|12345678|13572468|$FACTORY' '$WORK/daemon.log'"
stop_daemon
finish
