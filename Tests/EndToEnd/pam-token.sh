#!/usr/bin/env bash
# The token path through PAM: tokenpind with the simulated card (--reader sim), pamtester answering the card PIN
# prompt the daemon relays: success by token, a wrong card PIN falling back to the PIN, mode=token refusing the
# fallback, mode=pin never touching the card, the card PIN's hardware counter left where it should be, and a card PIN
# that is not UTF-8 refused by the module before it is sent (never "unavailable", never a fallback).
. "$(dirname "$0")/lib.sh"

if [ ! -f "$PAM_MODULE" ]; then make -C "$ROOT" -s pam >/dev/null || { echo "cannot build the PAM module"; exit 1; }; fi
command -v pamtester >/dev/null || { echo "pamtester is not installed"; exit 1; }
start_daemon --reader sim || exit 1
new_user DAVE || { echo "cannot create users"; exit 1; }
MODULE="$PAM_MODULE socket=$SOCKET timeout=10"
pam_service EITHER "auth required $MODULE" "account required pam_permit.so"
pam_service TOKEN "auth required $MODULE mode=token fallback=deny" "account required pam_permit.so"
pam_service PINONLY "auth required $MODULE mode=pin" "account required pam_permit.so"
tokenpin() { "$BIN/tokenpin" --socket "$SOCKET" --user "$DAVE" "$@"; }

tokenpin enrol --pin-stdin < <(printf '482916\n482916\n') >/dev/null
expect_code "toggle token on through the daemon (PIN, card PIN, admin PIN relayed)" 0 \
    tokenpin toggle token on --generate-key --yes --pin-stdin < <(printf '482916\n123456\n12345678\n')
check "types through the daemon: token enabled" bash -c "'$BIN/tokenpin' --socket '$SOCKET' --user '$DAVE' types | grep -q 'token  enabled'"

auth() { pamtester "$1" "$2" authenticate; }
expect_code "token: the card PIN authenticates" 0 auth "$EITHER" "$DAVE" <<<123456
check "token: the prompt names the card and its tries" grep -q "Card PIN for card" "$WORK/out" "$WORK/err"
expect_code "a wrong card PIN falls back to the PIN" 0 auth "$EITHER" "$DAVE" < <(printf '000000\n482916\n')
check "the fallback is announced" grep -q "falling back\|Token not used" "$WORK/out" "$WORK/err"
expect_code "mode=token fallback=deny: a wrong card PIN fails" 1 auth "$TOKEN" "$DAVE" <<<000000
check "mode=token: Authentication failure" grep -q "Authentication failure" "$WORK/err"
expect_code "mode=token: the right card PIN (1 try left) authenticates and restores it" 0 auth "$TOKEN" "$DAVE" <<<123456
expect_code "mode=pin: the PIN alone" 0 auth "$PINONLY" "$DAVE" <<<482916
check "mode=pin: no card prompt" bash -c "! grep -q 'Card PIN' '$WORK/out' '$WORK/err'"
card_tries() { tokenpin --json status | json_field token.cardTriesLeft; }
pam_service IGNORING "auth [success=ok ignore=ignore default=die] $MODULE ignore_unavailable" "auth required pam_permit.so" \
    "account required pam_permit.so"
before=$(card_tries)
expect_code "a card PIN that is not UTF-8 + ignore_unavailable: refused, never ignored" 1 auth "$IGNORING" "$DAVE" \
    < <(printf '\xff\xfe\n482916\n')
check "a card PIN that is not UTF-8: PAM_AUTH_ERR, no fallback to the PIN" grep -q "Authentication failure" "$WORK/err"
check "a card PIN that is not UTF-8 never reached the card (${before:-?} tries left)" \
    bash -c "[ -n '$before' ] && [ \"\$1\" = '$before' ]" _ "$(card_tries)"
remaining=$(tokenpin --json status | json_field remaining)
check "the PIN counter was never touched by card failures" test "$remaining" = 5
expect_code "toggle token off through the daemon: a wrong PIN switches nothing off (1)" 1 \
    tokenpin toggle token off --pin-stdin <<<000001
check "the wrong PIN was counted" test "$(tokenpin --json status | json_field remaining)" = 4
expect_code "toggle token off --method token: the card PIN relayed (0)" 0 \
    tokenpin --json toggle token off --method token --pin-stdin <<<123456
check "the event names the card as the method" grep -q '"method":"token"' "$WORK/out"
check "types through the daemon: token disabled" bash -c "'$BIN/tokenpin' --socket '$SOCKET' --user '$DAVE' types | grep -q 'token  disabled'"
check "no PIN in the daemon log" bash -c "! grep -qE '482916|123456|000000|000001|12345678' '$WORK/daemon.log'"
stop_daemon
finish
