#!/usr/bin/env bash
# pamtester against PAM service files that load the built pam_tokenpin.so by absolute path:
# success, wrong PIN, last try, locked, not enrolled, daemon down, ignore_unavailable, password change.
. "$(dirname "$0")/lib.sh"

if [ ! -f "$PAM_MODULE" ]; then make -C "$ROOT" -s pam >/dev/null || { echo "cannot build the PAM module"; exit 1; }; fi
command -v pamtester >/dev/null || { echo "pamtester is not installed"; exit 1; }
check "module links no Swift runtime" bash -c "! ldd '$PAM_MODULE' | grep -qi swift"
check "module exports the PAM entry points" bash -c "nm -D '$PAM_MODULE' | grep -q pam_sm_authenticate && nm -D '$PAM_MODULE' | grep -q pam_sm_chauthtok"

start_daemon || exit 1
new_user ALICE && new_user NOPIN || { echo "cannot create users"; exit 1; }
MODULE="$PAM_MODULE socket=$SOCKET timeout=10 debug"
pam_service SERVICE "auth required $MODULE" "account required pam_permit.so" "password required $MODULE"
pam_service IGNORING "auth [ignore=ignore default=die] $MODULE ignore_unavailable" "auth required pam_permit.so" \
    "account required pam_permit.so"
pam_service TOKENONLY "auth required $MODULE mode=token fallback=deny" "account required pam_permit.so"
pam_service BADOPT "auth required $MODULE frobnicate" "account required pam_permit.so"

client --user "$ALICE" enrol < <(printf '482916\n482916\n') >/dev/null
auth() { pamtester "$1" "$2" authenticate; }
expect_code "right PIN: PAM_SUCCESS" 0 auth "$SERVICE" "$ALICE" <<<482916
expect_code "wrong PIN: PAM_AUTH_ERR" 1 auth "$SERVICE" "$ALICE" <<<000000
check "wrong PIN: message says Authentication failure" grep -q "Authentication failure" "$WORK/err"
check "wrong PIN: tries left shown" grep -q "4 tries left" "$WORK/out" "$WORK/err"
for _ in 1 2 3; do auth "$SERVICE" "$ALICE" <<<000000 >/dev/null 2>&1; done
auth "$SERVICE" "$ALICE" <<<482916 >"$WORK/out" 2>"$WORK/err" || true
check "last try announced before the prompt" grep -q "Last try" "$WORK/out" "$WORK/err"
# The right PIN above restored the counter; lock it now.
for _ in 1 2 3 4; do auth "$SERVICE" "$ALICE" <<<000000 >/dev/null 2>&1; done
expect_code "fifth wrong PIN locks: PAM_MAXTRIES" 1 auth "$SERVICE" "$ALICE" <<<000000
check "locked: PAM_MAXTRIES (exhausted maximum number of retries)" grep -qi "maximum number of retries" "$WORK/err"
expect_code "locked: even the right PIN fails" 1 auth "$SERVICE" "$ALICE" <<<482916
check "locked: PAM_MAXTRIES again" grep -qi "maximum number of retries" "$WORK/err"
expect_code "not enrolled: PAM_AUTHINFO_UNAVAIL" 1 auth "$SERVICE" "$NOPIN" <<<482916
check "not enrolled: cannot retrieve authentication info" grep -qi "cannot retrieve authentication info" "$WORK/err"
expect_code "not enrolled + ignore_unavailable: next module decides" 0 auth "$IGNORING" "$NOPIN" <<<482916
expect_code "enrolled + ignore_unavailable: a wrong PIN still fails" 1 auth "$IGNORING" "$ALICE" <<<000000
expect_code "mode=token fallback=deny, no token enabled: unavailable" 1 auth "$TOKENONLY" "$ALICE" <<<482916
expect_code "unknown option: refused" 1 auth "$BADOPT" "$ALICE" <<<482916

# Password change through the password stack, on a fresh user.
client --user "$ALICE" reset < <(printf 'x\n') >/dev/null 2>&1
new_user CAROL
client --user "$CAROL" enrol < <(printf '482916\n482916\n') >/dev/null
expect_code "chauthtok: wrong current PIN refused" 1 pamtester "$SERVICE" "$CAROL" chauthtok < <(printf '000000\n')
expect_code "chauthtok: policy refuses a sequence" 1 pamtester "$SERVICE" "$CAROL" chauthtok < <(printf '482916\n123456\n123456\n')
expect_code "chauthtok: PIN changed" 0 pamtester "$SERVICE" "$CAROL" chauthtok < <(printf '482916\n739154\n739154\n')
expect_code "new PIN authenticates" 0 auth "$SERVICE" "$CAROL" <<<739154
check "no PIN in the daemon log" bash -c "! grep -qE '482916|739154|000000' '$WORK/daemon.log'"

stop_daemon
expect_code "daemon down: PAM_AUTHINFO_UNAVAIL" 1 auth "$SERVICE" "$CAROL" <<<739154
check "daemon down: cannot retrieve authentication info" grep -qi "cannot retrieve authentication info" "$WORK/err"
expect_code "daemon down + ignore_unavailable: next module decides" 0 auth "$IGNORING" "$CAROL" <<<739154
finish
