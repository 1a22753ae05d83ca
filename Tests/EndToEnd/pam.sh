#!/usr/bin/env bash
# pamtester against PAM service files that load the built pam_tokenpin.so by absolute path:
# success, wrong PIN, last try, locked, not enrolled, daemon down, ignore_unavailable, password change; then the
# module never failing open: a PIN that is not UTF-8 refused before it is sent, and a fake daemon (as root and as
# another user) answering every error code, unknown codes, garbage, closing or going silent mid-exchange;
# then PAM_SILENT through a small harness that records the conversation.
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
remaining() { client --user "$1" status | json_field remaining; }

# A secret that is not UTF-8 is refused by the module before it is sent: the daemon would refuse the line as
# malformed, which must never read as "unavailable" (PAM_IGNORE lets the next module decide).
expect_code "PIN \\xff + ignore_unavailable: refused, never success or ignore" 1 auth "$IGNORING" "$ALICE" < <(printf '\xff\n')
check "PIN \\xff: PAM_AUTH_ERR" grep -q "Authentication failure" "$WORK/err"
check "PIN \\xff: the daemon counted nothing" test "$(remaining "$ALICE")" = 5

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
expect_code "locked + ignore_unavailable: PAM_MAXTRIES, not ignored" 1 auth "$IGNORING" "$ALICE" <<<482916
check "locked + ignore_unavailable: maximum number of retries" grep -qi "maximum number of retries" "$WORK/err"
expect_code "not enrolled: PAM_AUTHINFO_UNAVAIL" 1 auth "$SERVICE" "$NOPIN" <<<482916
check "not enrolled: cannot retrieve authentication info" grep -qi "cannot retrieve authentication info" "$WORK/err"
expect_code "not enrolled + ignore_unavailable: next module decides" 0 auth "$IGNORING" "$NOPIN" <<<482916
expect_code "enrolled + ignore_unavailable: a wrong PIN still fails" 1 auth "$IGNORING" "$ALICE" <<<000000
expect_code "mode=token fallback=deny, no token enabled: refused" 1 auth "$TOKENONLY" "$ALICE" <<<482916
check "mode=token fallback=deny, no token enabled: PAM_AUTH_ERR" grep -q "Authentication failure" "$WORK/err"
expect_code "unknown option: refused" 1 auth "$BADOPT" "$ALICE" <<<482916

# Password change through the password stack, on a fresh user.
client --user "$ALICE" reset < <(printf 'x\n') >/dev/null 2>&1
new_user CAROL
client --user "$CAROL" enrol < <(printf '482916\n482916\n') >/dev/null
expect_code "chauthtok: wrong current PIN refused" 1 pamtester "$SERVICE" "$CAROL" chauthtok < <(printf '000000\n')
expect_code "chauthtok: policy refuses a sequence" 1 pamtester "$SERVICE" "$CAROL" chauthtok < <(printf '482916\n123456\n123456\n')
expect_code "chauthtok: a new PIN that is not UTF-8 is refused" 1 pamtester "$SERVICE" "$CAROL" chauthtok \
    < <(printf '482916\n\xc3\x28\xc3\x28\n\xc3\x28\xc3\x28\n')
expect_code "chauthtok: PIN changed" 0 pamtester "$SERVICE" "$CAROL" chauthtok < <(printf '482916\n739154\n739154\n')
expect_code "new PIN authenticates" 0 auth "$SERVICE" "$CAROL" <<<739154

# PAM_SILENT: a harness calls pam_authenticate / pam_chauthtok with or without it and prints every message the
# conversation receives (pamtester cannot pass flags). Secrets come from its standard input.
cat > "$WORK/harness.c" <<'EOF'
#define _GNU_SOURCE
#include <security/pam_appl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int converse(int count, const struct pam_message **messages, struct pam_response **responses, void *data) {
    (void)data;
    struct pam_response *answers = calloc((size_t)count, sizeof(*answers));
    if (answers == NULL) return PAM_BUF_ERR;
    for (int i = 0; i < count; i++) {
        const struct pam_message *message = messages[i];
        if (message->msg_style == PAM_PROMPT_ECHO_OFF || message->msg_style == PAM_PROMPT_ECHO_ON) {
            char line[256];
            printf("prompt: %s\n", message->msg);
            if (fgets(line, sizeof(line), stdin) == NULL) { free(answers); return PAM_CONV_ERR; }
            line[strcspn(line, "\n")] = '\0';
            answers[i].resp = strdup(line);
        } else {
            printf("%s: %s\n", message->msg_style == PAM_ERROR_MSG ? "error" : "info", message->msg);
        }
    }
    *responses = answers;
    return PAM_SUCCESS;
}

int main(int argc, char **argv) {
    if (argc != 5) { fprintf(stderr, "usage: harness SERVICE USER auth|chauthtok silent|loud\n"); return 2; }
    struct pam_conv conversation = {converse, NULL};
    pam_handle_t *pamh = NULL;
    if (pam_start(argv[1], argv[2], &conversation, &pamh) != PAM_SUCCESS) return 2;
    int flags = strcmp(argv[4], "silent") == 0 ? PAM_SILENT : 0;
    int status = strcmp(argv[3], "chauthtok") == 0 ? pam_chauthtok(pamh, flags) : pam_authenticate(pamh, flags);
    printf("result: %d %s\n", status, pam_strerror(pamh, status));
    pam_end(pamh, status);
    return status == PAM_SUCCESS ? 0 : 1;
}
EOF
cc -std=c11 -Wall -Wextra -Werror -o "$WORK/harness" "$WORK/harness.c" -lpam || { echo "cannot build the harness"; exit 1; }
harness() { "$WORK/harness" "$@"; }
expect_code "loud: a wrong PIN fails" 1 harness "$SERVICE" "$CAROL" auth loud <<<000000
check "loud: the conversation shows tries left" grep -q "^info: Wrong PIN. 4 tries left." "$WORK/out"
expect_code "PAM_SILENT: a wrong PIN fails" 1 harness "$SERVICE" "$CAROL" auth silent <<<000000
check "PAM_SILENT: the PIN is still asked for" grep -q "^prompt: PIN: " "$WORK/out"
check "PAM_SILENT: no information or error message" bash -c "! grep -qE '^(info|error):' '$WORK/out'"
check "PAM_SILENT: PAM_AUTH_ERR" grep -q "^result: 7 " "$WORK/out"
expect_code "PAM_SILENT: the right PIN authenticates" 0 harness "$SERVICE" "$CAROL" auth silent <<<739154
expect_code "PAM_SILENT chauthtok: PIN changed" 0 harness "$SERVICE" "$CAROL" chauthtok silent \
    < <(printf '739154\n264819\n264819\n')
check "PAM_SILENT chauthtok: no 'PIN changed.' message" bash -c "! grep -qE '^(info|error):' '$WORK/out'"
expect_code "not enrolled: PAM_AUTHINFO_UNAVAIL exactly" 1 harness "$SERVICE" "$NOPIN" auth loud <<<482916
check "not enrolled: code 9" grep -q "^result: 9 " "$WORK/out"
check "no PIN in the daemon log" bash -c "! grep -qE '482916|739154|264819|000000' '$WORK/daemon.log'"

stop_daemon
expect_code "daemon down: PAM_AUTHINFO_UNAVAIL" 1 auth "$SERVICE" "$CAROL" <<<739154
check "daemon down: cannot retrieve authentication info" grep -qi "cannot retrieve authentication info" "$WORK/err"
expect_code "daemon down + ignore_unavailable: next module decides" 0 auth "$IGNORING" "$CAROL" <<<739154

# --- A fake daemon ------------------------------------------------------------------------------------------------
# It plays a script per connection (send LINE, read, sleep S, close) and notes what the module sent (types and
# prompt names, never values) in its log. The module runs with ignore_unavailable, so any path that wrongly maps
# to "unavailable" shows as a success of the stack below.
cat > "$WORK/fake-daemon.py" <<'EOF'
import json, os, socket, sys, time

path, log, steps = sys.argv[1], sys.argv[2], sys.argv[3:]

def note(text):
    with open(log, "a") as f:
        f.write(text + "\n")

def describe(line):
    try:
        message = json.loads(line.decode("utf-8", "replace"))  # a secret that is not UTF-8 still shows as one
        text = "got %s %s" % (message.get("type"), message.get("prompt") or message.get("op") or "")
        if message.get("type") == "request":  # who is asking (protocol version 3), never a secret
            text += " v=%s invoker=%s service=%s rhost=%s tty=%s ruser=%s" % tuple(
                message.get(key) for key in ("v", "invokerUID", "service", "rhost", "tty", "ruser"))
        return text
    except ValueError:
        return "got unreadable"

try:
    os.unlink(path)
except FileNotFoundError:
    pass
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(path)
os.chmod(path, 0o666)
server.listen(8)
note("listening")
while True:
    connection, _ = server.accept()
    reader = connection.makefile("rb")
    first = reader.readline()
    if not first:
        note("probe")
        connection.close()
        continue
    note(describe(first))
    closed = False
    try:
        for step in steps:
            verb, _, argument = step.partition(" ")
            if verb == "send":
                connection.sendall(argument.encode() + b"\n")
            elif verb == "read":
                line = reader.readline()
                note(describe(line) if line else "eof")
            elif verb == "sleep":
                time.sleep(float(argument))
            elif verb == "close":
                closed = True
                break
    except OSError:
        note("broken")
    if not closed:
        connection.settimeout(2)
        try:
            for line in reader:
                note(describe(line))
        except OSError:
            pass
    note("done")
    connection.close()
EOF
FAKE_DIR=$WORK/fake
mkdir -p "$FAKE_DIR" && chmod 1777 "$FAKE_DIR"
FAKE_SOCKET=$FAKE_DIR/socket
FAKE_LOG=$FAKE_DIR/log
FAKE_PID=
FAKE_MODULE="$PAM_MODULE socket=$FAKE_SOCKET timeout=2"
pam_service FAKE "auth [success=ok ignore=ignore default=die] $FAKE_MODULE ignore_unavailable" \
    "auth required pam_permit.so" "account required pam_permit.so" \
    "password [success=ok ignore=ignore default=die] $FAKE_MODULE ignore_unavailable" \
    "password required pam_permit.so"

stop_fake() {
    if [ -n "$FAKE_PID" ]; then kill "$FAKE_PID" 2>/dev/null; wait "$FAKE_PID" 2>/dev/null; fi
    FAKE_PID=
    rm -f "$FAKE_SOCKET" "$FAKE_LOG"
}
trap 'stop_fake; cleanup' EXIT
# start_fake AS-USER STEPS...: the fake daemon run by AS-USER (root or a login name).
start_fake() {
    local as=$1; shift
    stop_fake
    # The system interpreter: one from root's home would not run as another user.
    if [ "$as" = root ]; then /usr/bin/python3 "$WORK/fake-daemon.py" "$FAKE_SOCKET" "$FAKE_LOG" "$@" &
    else setpriv --reuid="$as" --regid="$as" --clear-groups /usr/bin/python3 "$WORK/fake-daemon.py" "$FAKE_SOCKET" \
        "$FAKE_LOG" "$@" &
    fi
    FAKE_PID=$!
    for _ in $(seq 100); do grep -qs listening "$FAKE_LOG" && return 0; sleep 0.05; done
    echo "the fake daemon did not start"; return 1
}
sent_secret() { grep -q "^got secret" "$FAKE_LOG"; }
no_secret() { ! sent_secret; }

PROMPT='send {"v":1,"type":"prompt","prompt":"pin","triesLeft":5}'
error() { printf 'send {"v":1,"type":"error","code":"%s","message":"refused","exitCode":%s}' "$1" "${2:-1}"; }
result() { printf 'send {"v":1,"type":"result","exitCode":%s,"outcome":"%s","triesLeft":4,"lastTry":false}' "$2" "$1"; }
failure_text() {
    case $1 in
        AUTH_ERR) echo "Authentication failure" ;;
        MAXTRIES) echo "maximum number of retries" ;;
        AUTHINFO_UNAVAIL) echo "cannot retrieve authentication info" ;;
        PERM_DENIED) echo "Permission denied" ;;
    esac
}
# fake_auth NAME WANT STEPS...: authenticate through the fake playing STEPS; WANT is AUTH_ERR, MAXTRIES, PERM_DENIED
# or IGNORE
# (the stack then succeeds). The PIN typed at each prompt is 482916.
fake_auth() {
    local name=$1 want=$2; shift 2
    start_fake root "$@" || { not_ok "$name (no fake daemon)"; return; }
    if [ "$want" = IGNORE ]; then
        expect_code "$name: PAM_IGNORE" 0 auth "$FAKE" "$ALICE" < <(printf '482916\n482916\n')
        return
    fi
    auth "$FAKE" "$ALICE" < <(printf '482916\n482916\n') >"$WORK/out" 2>"$WORK/err"
    local got=$?
    if [ "$got" != 0 ] && grep -qi "$(failure_text "$want")" "$WORK/err"; then ok "$name: PAM_$want"
    else not_ok "$name: wanted PAM_$want, got exit $got: $(tr '\n' ' ' < "$WORK/err")"; fi
}

# Every request says who runs the stack (protocol version 3): the invoking real uid and the PAM items.
start_fake root "$PROMPT" read "$(result verified 0)" \
    && pamtester -I rhost=198.51.100.4 -I ruser=carol -I tty=/dev/pts/7 "$FAKE" "$ALICE" authenticate <<<482916 \
        >/dev/null 2>&1
check "the request carries the invoker: v=3, uid 0, the service, PAM_RHOST, PAM_TTY, PAM_RUSER" \
    grep -q "got request verify v=3 invoker=0 service=$FAKE rhost=198.51.100.4 tty=/dev/pts/7 ruser=carol" "$FAKE_LOG"
# A remote login the daemon does not answer (pam-remote = ignore) is "unavailable" before anything was sent.
fake_auth "error ignored before any secret" IGNORE "$(error ignored 77)"
check "error ignored: nothing was sent" no_secret
# A remote or other attempt's lock (counter: others) says the PIN still works at the machine.
start_fake root "$PROMPT" read 'send {"v":3,"type":"result","exitCode":3,"outcome":"locked","counter":"others"}' \
    && { harness "$FAKE" "$ALICE" auth loud <<<482916 >"$WORK/out" 2>&1
         check "a lock of su and remote logins: PAM_MAXTRIES and says so" grep -q "locked for su and remote logins" "$WORK/out"; }
start_fake root 'send {"v":3,"type":"event","event":"otherAttempts","failures":2,"class":"other","service":"su","invokerUID":1001,"invoker":"bob","rhost":null,"at":1}' \
    "$PROMPT" read "$(result verified 0)" \
    && { harness "$FAKE" "$ALICE" auth loud <<<482916 >"$WORK/out" 2>&1
         check "what su tried is told at the user's success" grep -q "2 failed attempts from su by bob" "$WORK/out"; }

# After the secret was sent, only `verified` succeeds.
start_fake root "$PROMPT" read "$(result verified 0)" && expect_code "fake daemon as root: verified authenticates" 0 auth "$FAKE" "$ALICE" <<<482916
# Protocol version 2 names the tries `remaining`; version 1's `triesLeft` is still read (one version).
start_fake root 'send {"v":2,"type":"prompt","prompt":"pin","remaining":5}' read \
    'send {"v":2,"type":"result","exitCode":0,"outcome":"verified"}' \
    && expect_code "fake daemon, protocol version 2: verified authenticates" 0 auth "$FAKE" "$ALICE" <<<482916
start_fake root 'send {"v":2,"type":"prompt","prompt":"pin","remaining":1}' read \
    'send {"v":2,"type":"result","exitCode":1,"outcome":"rejected","remaining":3,"lastTry":false}' \
    && { harness "$FAKE" "$ALICE" auth loud <<<482916 >"$WORK/out" 2>&1
         check "version 2: a prompt's remaining 1 says last try" grep -q "Last try" "$WORK/out"
         check "version 2: a rejected result's remaining is shown" grep -q "3 tries left" "$WORK/out"; }
start_fake root "$PROMPT" read "$(result rejected 1)" \
    && { harness "$FAKE" "$ALICE" auth loud <<<482916 >"$WORK/out" 2>&1
         check "version 1: triesLeft is still read" grep -q "4 tries left" "$WORK/out"; }
for code in not-enrolled token-unavailable token-not-enabled protocol-malformed protocol-truncated protocol-timeout \
    protocol-busy protocol-rate-limited permission-denied cancelled policy service-unavailable store-corrupt crypto \
    card-refused input configuration usage frobnicated; do
    fake_auth "error $code after the secret" AUTH_ERR "$PROMPT" read "$(error "$code")"
done
fake_auth "error without a code after the secret" AUTH_ERR "$PROMPT" read 'send {"v":1,"type":"error","message":"?"}'
fake_auth "result locked after the secret" MAXTRIES "$PROMPT" read "$(result locked 3)"
fake_auth "result rejected after the secret" AUTH_ERR "$PROMPT" read "$(result rejected 1)"
fake_auth "result with an unknown outcome" AUTH_ERR "$PROMPT" read "$(result maybe 0)"
fake_auth "result verified with a non-zero exit code" AUTH_ERR "$PROMPT" read "$(result verified 1)"
fake_auth "result verified, protocol version 4" AUTH_ERR "$PROMPT" read \
    'send {"v":4,"type":"result","exitCode":0,"outcome":"verified"}'
fake_auth "result with a duplicate outcome key" AUTH_ERR "$PROMPT" read \
    'send {"v":1,"type":"result","exitCode":0,"outcome":"verified","outcome":"rejected"}'
fake_auth "garbage after the secret" AUTH_ERR "$PROMPT" read 'send this is not JSON'
fake_auth "nested JSON after the secret" AUTH_ERR "$PROMPT" read 'send {"v":1,"type":"result","outcome":{"x":1}}'
fake_auth "unknown message type after the secret" AUTH_ERR "$PROMPT" read 'send {"v":1,"type":"surprise"}'
fake_auth "a question after the secret" AUTH_ERR "$PROMPT" read 'send {"v":1,"type":"question","text":"ok?"}'
fake_auth "daemon closes after the secret" AUTH_ERR "$PROMPT" read close
fake_auth "daemon silent after the secret (timeout)" AUTH_ERR "$PROMPT" read "sleep 4"
fake_auth "events, then the daemon closes" AUTH_ERR "$PROMPT" read \
    'send {"v":1,"type":"event","event":"tokenFailed","reason":"no card"}' close
fake_auth "a second prompt answered, then an error" AUTH_ERR 'send {"v":1,"type":"prompt","prompt":"card-pin","card":"FFFE 1234","triesLeft":3}' \
    read "$PROMPT" read "$(error protocol-malformed)"

# Before any secret: only not-enrolled is "unavailable"; a daemon that answers anything else was reached.
fake_auth "not-enrolled before any secret" IGNORE "$(error not-enrolled 4)"
for code in token-unavailable token-not-enabled protocol-busy protocol-malformed store-corrupt frobnicated; do
    fake_auth "error $code before any secret" AUTH_ERR "$(error "$code")"
done
fake_auth "permission-denied before any secret" PERM_DENIED "$(error permission-denied 77)"
fake_auth "daemon closes before any prompt" AUTH_ERR close
fake_auth "garbage before any prompt" AUTH_ERR 'send garbage'
fake_auth "verified without asking for anything" AUTH_ERR "$(result verified 0)"
fake_auth "a prompt verify never asks (recovery-key)" AUTH_ERR 'send {"v":1,"type":"prompt","prompt":"recovery-key"}' read
check "a prompt verify never asks: nothing was sent to it" no_secret
fake_auth "a prompt without a name" AUTH_ERR 'send {"v":1,"type":"prompt"}' read
for bad in '\xff' '\xc0\xaf' '\xed\xa0\x80' '\xf4\x90\x80\x80' '4\xe2\x82'; do
    start_fake root "$PROMPT" read "$(result verified 0)"
    expect_code "secret $bad refused before sending" 1 auth "$FAKE" "$ALICE" < <(printf "$bad\\n")
    check "secret $bad: the fake daemon received no secret" no_secret
done
stop_fake

# The daemon is root's: a socket served by anyone else is refused before the request is sent.
new_user MALLORY
start_fake "$MALLORY" "$PROMPT" read "$(result verified 0)"
expect_code "fake daemon run by another user: refused" 1 auth "$FAKE" "$ALICE" <<<482916
check "fake daemon run by another user: PAM_AUTH_ERR" grep -q "Authentication failure" "$WORK/err"
check "fake daemon run by another user: no secret sent" no_secret
stop_fake

# chauthtok through the fake: PRELIM_CHECK probes, then the change.
CHANGE_STEPS=('send {"v":1,"type":"prompt","prompt":"current-pin","triesLeft":5}' read
    'send {"v":1,"type":"prompt","prompt":"new-pin"}' read 'send {"v":1,"type":"prompt","prompt":"confirm-pin"}' read)
fake_change() {  # fake_change NAME WANT-TEXT STEPS...
    local name=$1 want=$2; shift 2
    start_fake root "$@" || { not_ok "$name (no fake daemon)"; return; }
    pamtester "$FAKE" "$ALICE" chauthtok < <(printf '482916\n739154\n739154\n') >"$WORK/out" 2>"$WORK/err"
    local got=$?
    if [ "$got" != 0 ] && grep -qi "$want" "$WORK/err"; then ok "$name"
    else not_ok "$name: wanted '$want', got exit $got: $(tr '\n' ' ' < "$WORK/err")"; fi
}
start_fake root "${CHANGE_STEPS[@]}" "$(result verified 0)"
expect_code "chauthtok through the fake: changed" 0 pamtester "$FAKE" "$ALICE" chauthtok < <(printf '482916\n739154\n739154\n')
fake_change "chauthtok: protocol-malformed after the current PIN fails" "Authentication failure" \
    "${CHANGE_STEPS[@]:0:2}" "$(error protocol-malformed)"
fake_change "chauthtok: not-enrolled after the current PIN fails" "Authentication failure" \
    "${CHANGE_STEPS[@]:0:2}" "$(error not-enrolled 4)"
fake_change "chauthtok: daemon closes after the new PIN" "Authentication failure" "${CHANGE_STEPS[@]}" close
fake_change "chauthtok: policy after the new PIN is an authentication token error" "manipulation error" \
    "${CHANGE_STEPS[@]}" "$(error policy 5)"
SITE_EVENT='send {"v":2,"type":"event","event":"policyViolation","rule":"site-check","reason":"it ends in this year"}'
fake_change "chauthtok: a pin-check refusal shows the program's reason" "New PIN refused: it ends in this year" \
    "${CHANGE_STEPS[@]}" "$SITE_EVENT" "$(error policy 5)"
check "chauthtok: the refusal is said once" test "$(grep -c 'refused' "$WORK/err")" = 1
fake_change "chauthtok: locked" "maximum number of retries" "${CHANGE_STEPS[@]:0:2}" "$(result locked 3)"
fake_change "chauthtok: unknown type before any secret" "Authentication failure" 'send {"v":1,"type":"surprise"}'
start_fake root "$(error not-enrolled 4)"
expect_code "chauthtok: not-enrolled before any secret is ignored" 0 pamtester "$FAKE" "$ALICE" chauthtok \
    < <(printf '482916\n')
stop_fake
finish
