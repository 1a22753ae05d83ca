#!/usr/bin/env bash
# A PKCS#11 token through tokenpind and PAM: a private SoftHSM2 (its own SOFTHSM2_CONF, a token made by softhsm2-util,
# keys by pkcs11-tool), tokenpind with `pkcs11-module` naming SoftHSM's module (loaded only by the tokenpin-pkcs11
# helpers it starts, never in the daemon), pamtester answering the token PIN prompt the daemon relays: bound with
# --app pkcs11 (refused with both URIs while two keys fit, then chosen by --token-uri), success by token, a wrong
# token PIN falling back to the PIN, the PIN counter untouched, a client's --pkcs11-module refused, a module that
# hangs at load ending in a clear failure with the daemon alive, and no PIN in the daemon log. Behind a test wrapper
# module: a token with a keypad (PAM and the CLI say where to type, nothing is asked), and one pulled from its slot
# (the daemon locks the sessions after lock-grace, unless the same key is back within it).
. "$(dirname "$0")/lib.sh"

if [ ! -f "$PAM_MODULE" ] || [ "$ROOT/pam/pam_tokenpin.c" -nt "$PAM_MODULE" ]; then make -C "$ROOT" -s pam >/dev/null || { echo "cannot build the PAM module"; exit 1; }; fi
for needed in pamtester softhsm2-util pkcs11-tool; do
    command -v "$needed" >/dev/null || { echo "skipped: needs $needed"; finish; exit $?; }
done
MODULE_SO=$(ls /usr/lib/softhsm/libsofthsm2.so /usr/lib/*-linux-gnu/softhsm/libsofthsm2.so 2>/dev/null | head -n1)
[ -n "$MODULE_SO" ] || { echo "skipped: needs SoftHSM2's module"; finish; exit $?; }
[ -x "$BIN/tokenpin-pkcs11" ] || { echo "tokenpin-pkcs11 is not built"; exit 1; }

export SOFTHSM2_CONF=$WORK/softhsm2.conf
mkdir -p "$WORK/tokens"
printf 'directories.tokendir = %s/tokens\nobjectstore.backend = file\nlog.level = ERROR\nslots.removable = false\n' \
    "$WORK" > "$SOFTHSM2_CONF"
softhsm2-util --init-token --free --label e2e --pin 123456 --so-pin 12345678 >/dev/null
p11() { pkcs11-tool --module "$MODULE_SO" --token-label e2e --login --pin 123456 "$@" >/dev/null 2>&1; }
p11 --keypairgen --key-type EC:prime256v1 --id 01 --label ec --usage-derive
p11 --keypairgen --key-type rsa:2048 --id 02 --label rsa --usage-decrypt
printf 'pkcs11-module = %s\n' "$MODULE_SO" >> "$CONFIG"

start_daemon || exit 1
new_user FRAN || { echo "cannot create users"; exit 1; }
MODULE="$PAM_MODULE socket=$SOCKET timeout=10"
pam_service EITHER "auth required $MODULE" "account required pam_permit.so"
tokenpin() { "$BIN/tokenpin" --socket "$SOCKET" --user "$FRAN" "$@"; }

tokenpin enrol --pin-stdin < <(printf '482916\n482916\n') >/dev/null
expect_code "two usable keys and no --token-uri: refused (2)" 2 \
    tokenpin toggle token on --app pkcs11 --pin-stdin < <(printf '482916\n123456\n')
check "the refusal lists both URIs" bash -c "grep -q 'id=%01' '$WORK/err' && grep -q 'id=%02' '$WORK/err'"
expect_code "a client's --pkcs11-module is refused by the CLI: tokenpind loads only its own (2)" 2 \
    tokenpin toggle token on --pkcs11-module /tmp/evil.so --pin-stdin < <(printf '482916\n123456\n')
expect_code "toggle token on --token-uri through the daemon (PIN, token PIN relayed)" 0 \
    tokenpin toggle token on --token-uri 'pkcs11:token=e2e;id=%01' --pin-stdin < <(printf '482916\n123456\n')
check "the binding is a PKCS#11 one" bash -c "'$BIN/tokenpin' --socket '$SOCKET' --user '$FRAN' --json status | grep -q 'pkcs11-key:'"
expect_code "readers --app pkcs11 through the daemon shows the bound key's URI" 0 tokenpin readers --app pkcs11
check "the URI is listed" grep -q 'pkcs11:.*token=e2e;id=%01' "$WORK/out"

auth() { pamtester "$1" "$2" authenticate; }
expect_code "PKCS#11 token: the token PIN authenticates" 0 auth "$EITHER" "$FRAN" <<<123456
check "the prompt names the token" grep -q "token 'e2e'" "$WORK/out" "$WORK/err"
expect_code "PKCS#11 token: a wrong token PIN falls back to the PIN" 0 auth "$EITHER" "$FRAN" < <(printf '000000\n482916\n')
check "the fallback is announced" grep -q "falling back\|Token not used" "$WORK/out" "$WORK/err"
expect_code "PKCS#11 token: the token PIN authenticates again (re-sealed)" 0 auth "$EITHER" "$FRAN" <<<123456
check "the PIN counter was never touched by token failures" test "$(tokenpin --json status | json_field remaining)" = 5

# Keypad and removal: the same SoftHSM token behind the test wrapper module (Tests/TokenpinPKCS11Tests/Support/
# wrapper-module.c), which gives it a protected authentication path (the PIN "typed on the keypad" is read from a
# file) and a slot it can be pulled from (a marker file). The daemon runs in a mount namespace of its own whose
# loginctl only writes down which sessions it would lock.
stop_daemon
WRAPPER_SOURCE=$ROOT/Tests/TokenpinPKCS11Tests/Support/wrapper-module.c
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null \
    && cc -std=gnu11 -shared -fPIC -o "$WORK/wrapper.so" "$WRAPPER_SOURCE" -I/usr/include/p11-kit-1 2>/dev/null; then
    export TOKENPIN_WRAP_INNER=$MODULE_SO TOKENPIN_WRAP_PRESENT=$WORK/present TOKENPIN_WRAP_KEYPAD=$WORK/keypad
    touch "$WORK/present"
    sed -i "s|^pkcs11-module = .*|pkcs11-module = $WORK/wrapper.so|" "$CONFIG"
    printf 'on-card-removal = lock\nlock-grace = 4\n' >> "$CONFIG"
    printf '#!/bin/sh\ncase "$1" in show-user) echo c7 ;; lock-session) echo "$@" >>%s ;; esac\n' "$WORK/locked" \
        > "$WORK/loginctl"
    chmod 0755 "$WORK/loginctl"
    printf '#!/bin/sh\nexec unshare -m --propagation private sh -c %s "%s" "$@"\n' \
        "'mount --bind $WORK/loginctl /usr/bin/loginctl && exec \"\$0\" \"\$@\"'" "$TOKENPIND" > "$WORK/tokenpind-ns"
    chmod 0755 "$WORK/tokenpind-ns"
    REAL_TOKENPIND=$TOKENPIND
    TOKENPIND=$WORK/tokenpind-ns
    start_daemon || exit 1

    printf '123456\n' > "$WORK/keypad"
    expect_code "keypad token: PAM authenticates with the PIN typed on the keypad, nothing at the keyboard" 0 \
        auth "$EITHER" "$FRAN" </dev/null
    check "PAM says where to type (an information message), with no number of tries" \
        grep -q "Enter the card PIN on the keypad of [^(]*\.$" "$WORK/out" "$WORK/err"
    check "... and asks no card PIN" bash -c "! grep -q 'Card PIN for' '$WORK/out' '$WORK/err'"
    check "... the keypad entry was taken" test ! -s "$WORK/keypad"
    printf '123456\n' > "$WORK/keypad"
    expect_code "keypad token: the CLI through tokenpind, nothing on stdin" 0 tokenpin verify --method token </dev/null
    check "... says where to type on standard error" grep -q "Enter the card PIN on the keypad of .*(card .*token 'e2e'" "$WORK/err"

    # waits SECONDS for COUNT lines matching PATTERN in FILE.
    wait_for() {
        local n
        for _ in $(seq $(($1 * 10))); do
            n=$(grep -c "$2" "$3" 2>/dev/null)
            [ "${n:-0}" -ge "$4" ] && return 0
            sleep 0.1
        done
        return 1
    }
    rm "$WORK/present"
    check "the token pulled: the daemon saw it go" wait_for 10 "PKCS#11 token removed" "$WORK/daemon.log" 1
    check "... and locked the user's sessions after lock-grace" wait_for 10 "lock-session c7" "$WORK/locked" 1
    touch "$WORK/present"
    check "the token back: the daemon saw it" wait_for 10 "PKCS#11 token back" "$WORK/daemon.log" 1
    : > "$WORK/locked"
    printf '123456\n' > "$WORK/keypad"
    expect_code "... and PAM authenticates by token again" 0 auth "$EITHER" "$FRAN" </dev/null
    rm "$WORK/present"
    check "pulled again: seen" wait_for 10 "PKCS#11 token removed" "$WORK/daemon.log" 2
    touch "$WORK/present"
    check "put back: seen" wait_for 10 "PKCS#11 token back" "$WORK/daemon.log" 2
    check "... the daemon read the key again and kept the sessions open" \
        wait_for 10 "card back within lock-grace" "$WORK/daemon.log" 1
    check "... no lock" test ! -s "$WORK/locked"
    stop_daemon
    TOKENPIND=$REAL_TOKENPIND
    unset TOKENPIN_WRAP_INNER TOKENPIN_WRAP_PRESENT TOKENPIN_WRAP_KEYPAD
else
    echo "skipped: keypad and removal (needs root, unshare and a C compiler)"
fi

# A module that never answers: the helper is killed at its deadline, the PIN fallback works, the daemon lives.
cat > "$WORK/hang.c" <<'C'
#include <unistd.h>
int C_GetFunctionList(void **list) { (void)list; for (;;) pause(); return 0; }
C
if cc -shared -fPIC -o "$WORK/hang.so" "$WORK/hang.c" 2>/dev/null; then
    sed -i "s|^pkcs11-module = .*|pkcs11-module = $WORK/hang.so|" "$CONFIG"
    printf 'card-timeout = 3\n' >> "$CONFIG"  # the helper's deadline, well inside the PAM module's timeout=10
    start_daemon || exit 1
    started=$(date +%s)
    expect_code "a module that hangs: the PIN fallback authenticates" 0 auth "$EITHER" "$FRAN" <<<482916
    check "within the helper's deadline (card-timeout, 3 s) and a little" test $(($(date +%s) - started)) -le 8
    check "the daemon is alive after the hung module" kill -0 "$DAEMON_PID"
    expect_code "and still answers" 0 tokenpin status
else
    echo "skipped: the hanging module (no C compiler)"
fi
check "no PIN in the daemon log" bash -c "! grep -qE '482916|123456|000000' '$WORK/daemon.log'"
stop_daemon
finish
