#!/usr/bin/env bash
# The hostile local user (issue 8): each class of attack against a real tokenpind, run by an unprivileged
# temporary user, while root verifies another user the way login and sudo do. After each attack: the daemon is
# alive, the victim's verification completed within STALL_LIMIT seconds, nothing was counted that should not
# be and everything that should be was, and PAM never said success or PAM_IGNORE after a secret was sent.
. "$(dirname "$0")/lib.sh"
# Inside a private pcscd (Simulator/pcscd-sandbox), whose mount namespace also lets the suite put its own PAM file
# over /etc/pam.d/su, its own logind state on /run/systemd and a recording loginctl for this run only.
SIM=${TOKENPIN_SIM_BIN:-$BIN/tokenpin-sim}
if [ "${TOKENPIN_SANDBOX:-}" != 1 ] && command -v pcscd >/dev/null && [ -x "$SIM" ] \
    && ls /usr/lib/pcsc/drivers/serial/libifdvpcd.so* >/dev/null 2>&1; then
    trap - EXIT; rm -rf "$WORK"; rm -f "/etc/pam.d/$ENROL_SERVICE"
    exec "$ROOT/Simulator/pcscd-sandbox" -- bash "$0"
fi
ATTACK="python3 $ROOT/Tests/EndToEnd/attack.py"
STALL_LIMIT=${STALL_LIMIT:-3}
LONGEST=0
printf 'retries-max = 50\ndaemon-wait-timeout = 2\ndaemon-rate-limit = 100000\n' >> "$CONFIG"
start_daemon || exit 1
new_user VICTIM && new_user MALLORY && new_user NEWBIE || { echo "cannot create users"; exit 1; }
client --user "$VICTIM" enrol < <(printf '482916\n482916\n') >/dev/null || not_ok "enrol the victim"
client --user "$MALLORY" enrol < <(printf '739154\n739154\n') >/dev/null || not_ok "enrol the attacker"
as_mallory() { runuser -u "$MALLORY" -- "$@"; }
# Waits (up to 10 s) until the attack.py park writing to FILE sits at its operation's first prompt.
wait_parked() {
    local waited=0
    until grep -q '"parked"' "$1" 2>/dev/null; do
        ((waited++ < 100)) || return 1
        sleep 0.1
    done
}
remaining() { client --user "$1" status | json_field remaining; }

# victim_ok NAME: root verifies the victim now; it must succeed within STALL_LIMIT seconds.
victim_ok() {
    local start end took
    start=$(date +%s.%N)
    client --user "$VICTIM" verify --method pin <<<482916 >"$WORK/victim" 2>&1
    local code=$?
    end=$(date +%s.%N)
    took=$(echo "$end - $start" | bc)
    if (( $(echo "$took > $LONGEST" | bc) )); then LONGEST=$took; fi
    if [ "$code" = 0 ] && (( $(echo "$took < $STALL_LIMIT" | bc) )); then ok "$1: the victim verified in ${took}s"
    else not_ok "$1: the victim's verify took ${took}s, exit $code: $(head -c 200 "$WORK/victim")"; fi
}
# alive NAME: the daemon survived; when it did not, that fails and a fresh one serves the attacks that follow.
alive() {
    if kill -0 "$DAEMON_PID" 2>/dev/null; then ok "$1: the daemon is alive"
    else not_ok "$1: the daemon died: $(tail -c 300 "$WORK/daemon.log")"; DAEMON_PID=; start_daemon; fi
}

# 1. Untrusted numbers: records and requests whose numbers are out of range never trap the daemon.
"$TOKENPIND" --version >/dev/null
LOCAL=$WORK/local; mkdir -m 0700 "$LOCAL"
"$BIN/tokenpin" --local --store "$LOCAL" --config "$CONFIG" enrol --pin-stdin < <(printf '482916\n482916\n') >/dev/null 2>&1
template=$WORK/template.json
record_json "$(ls "$LOCAL"/*.json | head -1)" >"$template"
hostile_record() {  # hostile_record OUT PYTHON-EXPRESSION-ON-r
    python3 - "$template" "$1" "$MALLORY" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); r["user"] = sys.argv[3]
exec(sys.argv[4])
json.dump(r, open(sys.argv[2], "w"))
PY
    chmod 0644 "$1"
}
for case in 'r["slots"][0]["kdf"]["memoryKiB"] = 9223372036854775807' \
            'r["counter"]["failures"] = 9223372036854775807' \
            'r["counter"]["remaining"] = -9223372036854775808' \
            'r["counter"]["recoveryFailures"] = 9223372036854775807' \
            'r["slots"][0]["kdf"]["passes"] = 9223372036854775807' \
            'r["counter"]["max"] = 9223372036854775807' \
            'r["counter"]["lastAttemptAt"] = "9999-12-31T23:59:59Z"'; do
    new_user IMPORTER || exit 1
    hostile_record "$WORK/hostile.json" "$case; r['user'] = '$IMPORTER'"
    stage_import IMPORT "$IMPORTER" "$IMPORTER" "$WORK/hostile.json" || exit 1
    runuser -u "$IMPORTER" -- "$TOKENPIN" "${CLI_ARGS[@]}" --store "$IMPORT" import <<<"$(password_of "$IMPORTER")" >"$WORK/out" 2>&1
    code=$?
    # A record that passes the checks must then verify without harm; one that does not is bad data (65).
    if [ "$code" = 0 ]; then client --user "$IMPORTER" verify <<<000000 >"$WORK/verify" 2>&1; code=$?; fi
    case "$code" in
        65|1|3) ok "import of a record with $case: refused as bad data or verified harmlessly (exit $code)" ;;
        *) not_ok "import of a record with $case: exit $code: $(head -c 300 "$WORK/out")" ;;
    esac
    alive "import $case"
done
victim_ok "hostile records"
$ATTACK "$SOCKET" numbers >"$WORK/numbers" 2>&1
check "out-of-range numbers on the wire: each refused as a protocol error" \
    python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["codes"]; sys.exit(0 if all(x and x.startswith("protocol-") for x in c) else 1)' "$WORK/numbers"
alive "wire numbers"

# 2. A client that stops reading: pipelined pings, a verify and its PIN, never read. At every pipeline
#    length the victim is served, the attacker's attempts count, and nothing stays held.
before=$(remaining "$MALLORY")
for pings in 150 200 250 300 400; do
    as_mallory $ATTACK "$SOCKET" pipeline "$pings" "$MALLORY" 000000 8 >/dev/null 2>&1 &
    attacker=$!
    sleep 1
    victim_ok "stop reading after $pings pings"
    wait "$attacker"
done
after=$(remaining "$MALLORY")
check "stop reading: the attacker's verifies that ran were counted ($before -> $after)" [ "$after" -lt "$before" ]
alive "stop reading"

# 3. Two operations of one user at once: the second waits a bounded time and says busy, nothing counted;
#    a prompt left unanswered holds no memory and blocks no one else.
as_mallory $ATTACK "$SOCKET" park verify "$MALLORY" 6 >"$WORK/park" 2>&1 &
attacker=$!
check "a verify parked at its prompt" wait_parked "$WORK/park"
before=$(remaining "$MALLORY")
as_mallory "$TOKENPIN" "${CLI_ARGS[@]}" verify <<<739154 >"$WORK/out" 2>&1
check "a second verify of the same user: busy (69)" grep -q '"code":"busy"' "$WORK/out"
check "busy counted nothing" [ "$(remaining "$MALLORY")" = "$before" ]
victim_ok "a verify parked at its prompt"
wait "$attacker"
as_mallory $ATTACK "$SOCKET" park enrol "$NEWBIE" 3 >"$WORK/park" 2>&1
check "enrol for another user: refused before any prompt" grep -q 'permission-denied' "$WORK/park"

# 4. Garbage on the socket, floods and slow senders: refused, the victim unaffected.
for kind in binary invalid-utf8-secret nul huge-line deep-nesting half-line secret-first unknown-op dup-keys; do
    as_mallory $ATTACK "$SOCKET" garbage "$kind" >"$WORK/garbage" 2>&1
    check "garbage $kind: answered with a protocol error or closed" grep -qE 'protocol-|closed|send' "$WORK/garbage"
done
alive "garbage"
victim_ok "garbage"
check "invalid UTF-8 as a PIN counted nothing" [ "$(remaining "$MALLORY")" = "$before" ]
as_mallory $ATTACK "$SOCKET" flood 300 4 >"$WORK/flood" 2>&1 &
attacker=$!
sleep 2
victim_ok "300 connections from one user"
wait "$attacker"
as_mallory $ATTACK "$SOCKET" trickle 5 >/dev/null 2>&1 &
attacker=$!
victim_ok "a slow sender"
wait "$attacker"

# 5. A first way in needs the login password: a wrong one is refused like a wrong PIN and enrols nothing.
runuser -u "$NEWBIE" -- "$TOKENPIN" "${CLI_ARGS[@]}" enrol < <(printf 'not-the-password\n111111\n111111\n') >"$WORK/out" 2>&1
code=$?
check "enrol with a wrong login password: refused (1)" [ "$code" = 1 ]
check "enrol with a wrong login password: password-rejected" grep -q 'password-rejected' "$WORK/out"
check "after a refused password: not enrolled" [ "$(client --user "$NEWBIE" status | json_field enrolled)" = False ]
hostile_record "$WORK/plain.json" "r['user'] = '$NEWBIE'"
stage_import IMPORT "$NEWBIE" "$NEWBIE" "$WORK/plain.json" || exit 1
runuser -u "$NEWBIE" -- "$TOKENPIN" "${CLI_ARGS[@]}" --store "$IMPORT" import <<<"wrong" >"$WORK/out" 2>&1
check "import with a wrong login password right after one: delayed (3), PAM not run" [ $? = 3 ]
check "... saying when to try again" grep -q '"code":"delayed"' "$WORK/out"
sleep 2.2  # past the delay after the first wrong password
runuser -u "$NEWBIE" -- "$TOKENPIN" "${CLI_ARGS[@]}" --store "$IMPORT" import <<<"wrong" >"$WORK/out" 2>&1
check "import with a wrong login password: refused (1)" [ $? = 1 ]
sleep 4.2  # the delay doubled
runuser -u "$NEWBIE" -- "$TOKENPIN" "${CLI_ARGS[@]}" enrol < <(printf '%s\n482916\n482916\n' "$(password_of "$NEWBIE")") >"$WORK/out" 2>&1
check "enrol with the login password: enrolled" [ $? = 0 ]
victim_ok "password checks"

# 5b. PAM never fails open: once a secret was sent (or refused before sending), nothing but a verification is
#     success, and PAM_IGNORE is only for a user without a record or an unreachable daemon.
if [ ! -f "$PAM_MODULE" ]; then make -C "$ROOT" -s pam >/dev/null; fi
# PAM_IGNORE from pam_tokenpin falls through to pam_permit: a fail-open shows as success.
IGNORING_STACK=("auth [ignore=ignore default=die] $PAM_MODULE socket=$SOCKET timeout=10 ignore_unavailable"
    "auth required pam_permit.so" "account required pam_permit.so")
pam_service IGNORING "${IGNORING_STACK[@]}"
before=$(remaining "$MALLORY")
for pin in '\xff' '\xc3' '\xed\xa0\x80' '\xc0\xaf' '000000'; do
    printf "$pin\n" | pamtester "$IGNORING" "$MALLORY" authenticate >"$WORK/out" 2>&1
    code=$?
    check "PAM with ignore_unavailable, PIN $pin: not authenticated (exit $code)" [ "$code" != 0 ]
done
after=$(remaining "$MALLORY")
check "PAM: only the well-formed wrong PIN was counted ($before -> $after)" [ "$after" = $((before - 1)) ]
alive "PAM odd bytes"

# 6. SIGTERM ends the daemon within its drain time, with clients parked at prompts.
as_mallory $ATTACK "$SOCKET" park verify "$MALLORY" 20 >"$WORK/park" 2>&1 &
attacker=$!
check "a verify parked at its prompt before SIGTERM" wait_parked "$WORK/park"
start=$(date +%s)
kill -TERM "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null
took=$(( $(date +%s) - start ))
DAEMON_PID=
check "SIGTERM with a client parked at a prompt: the daemon exits within 5 s (${took}s)" [ "$took" -le 5 ]
kill "$attacker" 2>/dev/null; wait "$attacker" 2>/dev/null

# 7. Cards through the root daemon: a user reaches only the card bound to their own record; switching the token
#    off needs a counted verification; a token verify parked at its card-PIN prompt holds nothing others need.
start_daemon --reader sim || exit 1
tp() { "$BIN/tokenpin" --socket "$SOCKET" "$@"; }
tp --user "$VICTIM" toggle token on --generate-key --yes --pin-stdin < <(printf '482916\n123456\n12345678\n') >/dev/null 2>&1 \
    || not_ok "bind the victim's card"
as_mallory "$BIN/tokenpin" --socket "$SOCKET" --json readers >"$WORK/out" 2>&1
check "readers for a user without a bound card: no card serial shown" bash -c "! grep -q '\"serial\":\"[0-9A-F]' '$WORK/out'"
before_card=$(tp --user "$VICTIM" --json status | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"]["cardTriesLeft"])' 2>/dev/null)
as_mallory "$BIN/tokenpin" --socket "$SOCKET" token change-pin --pin-stdin < <(printf '000000\n111111\n111111\n') >"$WORK/out" 2>&1
check "token change-pin on another user's card: permission denied (77)" [ $? = 77 ]
as_mallory "$BIN/tokenpin" --socket "$SOCKET" token unblock --admin --pin-stdin < <(printf '00000000\n111111\n111111\n') >"$WORK/out" 2>&1
check "token unblock --admin on another user's card: permission denied (77)" [ $? = 77 ]
after_card=$(tp --user "$VICTIM" --json status | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"]["cardTriesLeft"])' 2>/dev/null)
check "the victim's card PIN counter untouched ($before_card -> $after_card)" [ -n "$before_card" ] && [ "$before_card" = "$after_card" ]
tp --user "$VICTIM" toggle token off --pin-stdin </dev/null >"$WORK/out" 2>&1
code=$?
check "toggle token off without a PIN: refused (exit $code)" [ "$code" != 0 ]
check "toggle token off without a PIN: the token stays on" bash -c "'$BIN/tokenpin' --socket '$SOCKET' --user '$VICTIM' types | grep -q 'token  enabled'"
# A token verify parked at the card-PIN prompt, then a PIN verify of the same user: busy, bounded, nothing held.
python3 "$ROOT/Tests/EndToEnd/attack.py" "$SOCKET" park verify-token "$VICTIM" 10 >"$WORK/park" 2>&1 &
parked=$!
check "a token verify parked at the card-PIN prompt" wait_parked "$WORK/park"
echo "# the parked token verify's first line: $(head -c 400 "$WORK/park")"
start=$(date +%s.%N)
client --user "$VICTIM" verify --method pin <<<482916 >"$WORK/out" 2>&1  # scripts name the type once a token is on
took=$(echo "$(date +%s.%N) - $start" | bc)
check "a PIN verify while a token verify waits at the card-PIN prompt: busy within the wait bound (${took}s)" \
    grep -q '"code":"busy"' "$WORK/out"
echo "# the PIN verify said: $(head -c 400 "$WORK/out")"
expect_code "another user verifies meanwhile" 0 client --user "$MALLORY" verify <<<739154
start=$(date +%s)
kill -TERM "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null
took=$(( $(date +%s) - start ))
DAEMON_PID=
check "SIGTERM with a token verify parked at the card-PIN prompt: the daemon exits within 5 s (${took}s)" [ "$took" -le 5 ]
wait "$parked" 2>/dev/null
check "the parked verify was at the card-PIN prompt" grep -q 'card-pin' "$WORK/park"

# ---- Issue 18: every try and every change to a card is spent only by someone entitled to spend it. ----
# The attacks below run against the same kind of daemon; each failed on the main branch before issue 18.
status_of() { "$BIN/tokenpin" --socket "$SOCKET" --user "$1" --json status; }
card_tries_of() { status_of "$1" | json_field token.cardTriesLeft; }
serial_of() { "$BIN/tokenpin" --socket "$SOCKET" --user "$1" --json types | python3 -c '
import json,sys; print([t for t in json.load(sys.stdin)["types"] if t["type"]=="token"][0].get("serial",""))'; }
uid_of() { id -u "$1"; }
# restart_daemon ARGS...: the daemon again, with the configuration as it is now.
restart_daemon() { stop_daemon; start_daemon "$@"; }
SANDBOXED=${TOKENPIN_SANDBOX:-0}

# 8. Cards through the root daemon: another user's card is not reachable at all; refused (77) before anything is
#    asked, without naming the card, and nothing is spent.
start_daemon --reader sim || exit 1
VICTIM_SERIAL=$(serial_of "$VICTIM")
check "the victim's card is bound (serial ${VICTIM_SERIAL:-none})" test -n "$VICTIM_SERIAL"
before_card=$(card_tries_of "$VICTIM")
before_pin=$(remaining "$MALLORY")
as_mallory "$BIN/tokenpin" --socket "$SOCKET" toggle token on --pin-stdin < <(printf '739154\n000000\n') >"$WORK/out" 2>&1
check "toggle token on with another user's card present: permission denied (77)" [ $? = 77 ]
check "toggle token on: the refusal does not name the victim's card" bash -c "! grep -qi '${VICTIM_SERIAL: -8}' '$WORK/out'"
check "toggle token on: nothing was asked (the attacker's PIN counter is untouched)" [ "$(remaining "$MALLORY")" = "$before_pin" ]
as_mallory "$BIN/tokenpin" --socket "$SOCKET" toggle token on --generate-key --yes --pin-stdin \
    < <(printf '739154\n12345678\n000000\n') >"$WORK/out" 2>&1
check "toggle token on --generate-key with the factory admin PIN on another user's card: refused (77)" [ $? = 77 ]
as_mallory "$BIN/tokenpin" --socket "$SOCKET" toggle token on --serial "$VICTIM_SERIAL" --pin-stdin \
    < <(printf '739154\n000000\n') >"$WORK/out" 2>&1
check "toggle token on --serial naming another user's card: refused (77)" [ $? = 77 ]
check "the victim's card PIN tries are untouched ($before_card -> $(card_tries_of "$VICTIM"))" \
    [ "$(card_tries_of "$VICTIM")" = "$before_card" ]
expect_code "the victim's card key was not replaced: the victim verifies by token" 0 \
    tp --user "$VICTIM" verify --method token --pin-stdin <<<123456
# A record carrying the victim's binding, imported by a user who has none: the binding is dropped.
new_user IMPORTER2 || exit 1
# (the binding is public: its serial and keys are what the card tells anyone; the slot itself cannot open)
record_json "$STATE/$VICTIM.json" >"$WORK/victim-record.json"
hostile_record "$WORK/withcard.json" "r['user'] = '$IMPORTER2'
v = json.load(open('$WORK/victim-record.json'))
r['slots'] += [s for s in v['slots'] if s['kind'] in ('token', 'composite')]"
stage_import IMPORT2 "$IMPORTER2" "$IMPORTER2" "$WORK/withcard.json" || exit 1
runuser -u "$IMPORTER2" -- "$TOKENPIN" "${CLI_ARGS[@]}" --store "$IMPORT2" import <<<"$(password_of "$IMPORTER2")" >"$WORK/out" 2>&1
check "import of a record carrying another user's card binding: the PIN is imported (exit $?)" \
    grep -q '"record"' "$WORK/out"
check "import: the card binding was dropped (token disabled)" bash -c \
    "'$BIN/tokenpin' --socket '$SOCKET' --user '$IMPORTER2' types | grep -q 'token  disabled'"
runuser -u "$IMPORTER2" -- "$TOKENPIN" "${CLI_ARGS[@]}" verify --method token <<<000000 >"$WORK/out" 2>&1
check "import: a token verify with the imported binding reaches no card" [ "$(card_tries_of "$VICTIM")" = "$before_card" ]
alive "another user's card"

# 9. Who may bind a card no record binds (card-bind): the owner of the active local logind session, by default.
stop_daemon
MAIN_STATE=$STATE; STATE=$WORK/state-bind
start_daemon --reader sim || exit 1
new_user SEATED && new_user STANDING || exit 1
for user in "$SEATED" "$STANDING"; do client --user "$user" enrol < <(printf '739154\n739154\n') >/dev/null; done
as_seated() { runuser -u "$SEATED" -- "$BIN/tokenpin" --socket "$SOCKET" "$@"; }
if [ "$SANDBOXED" = 1 ]; then
    # A logind of this run's own: /run/systemd/{seats,sessions} as sd-login reads them.
    mount -t tmpfs tmpfs /run/systemd && mkdir -p /run/systemd/seats /run/systemd/sessions /run/systemd/users
    seat() {  # seat UID REMOTE: seat0's active session c1 belongs to UID, remote or not
        printf 'IS_SEAT0=1\nCAN_MULTI_SESSION=1\nACTIVE=c1\nACTIVE_UID=%s\nSESSIONS=c1\nUIDS=%s\n' "$1" "$1" \
            >/run/systemd/seats/seat0
        printf 'UID=%s\nUSER=%s\nACTIVE=1\nIS_DISPLAY=1\nSTATE=active\nREMOTE=%s\nTYPE=x11\nCLASS=user\nSEAT=seat0\n' \
            "$1" "$(id -un "$1")" "$2" >/run/systemd/sessions/c1
    }
    before_pin=$(remaining "$SEATED")
    expect_code "card-bind = active-session, no session: an unbound card is not bound (77)" 77 \
        as_seated toggle token on --pin-stdin < <(printf '739154\n123456\n')
    check "no session: nothing was asked (the PIN counter is untouched)" test "$(remaining "$SEATED")" = "$before_pin"
    seat "$(uid_of "$SEATED")" 1
    expect_code "card-bind = active-session, a remote session: not bound (77)" 77 \
        as_seated toggle token on --pin-stdin < <(printf '739154\n123456\n')
    seat "$(uid_of "$STANDING")" 0
    expect_code "card-bind = active-session, someone else's session: not bound (77)" 77 \
        as_seated toggle token on --pin-stdin < <(printf '739154\n123456\n')
    as_seated --json readers >"$WORK/out" 2>&1
    check "readers for a user who may not bind: no card shown" bash -c "! grep -q '\"serial\":\"[0-9A-F]' '$WORK/out'"
    # Nothing destructive before the card PIN: a wrong card PIN leaves the factory card without a key.
    seat "$(uid_of "$SEATED")" 0
    as_seated --json readers >"$WORK/out" 2>&1
    check "readers for the seat's user: the unbound card is shown" grep -q '"serial":"[0-9A-F]' "$WORK/out"
    # (PIN, card PIN, admin PIN: the admin PIN's line is taken as the card PIN, which is wrong)
    expect_code "--generate-key with a wrong card PIN: refused before anything is generated (1)" 1 \
        as_seated toggle token on --generate-key --yes --pin-stdin < <(printf '739154\n12345678\n000000\n')
    as_seated --json readers >"$WORK/out" 2>&1
    check "the wrong card PIN left the card without a key" grep -q '"key":null' "$WORK/out"
    expect_code "card-bind = active-session, the seat's own local session: bound (PIN, card PIN, admin PIN)" 0 \
        as_seated toggle token on --generate-key --yes --pin-stdin < <(printf '739154\n123456\n12345678\n')
else
    echo "# skipped: the logind checks need the sandbox's mount namespace"
    client --user "$SEATED" toggle token on --generate-key --yes < <(printf '739154\n123456\n12345678\n') >/dev/null
fi
SEATED_SERIAL=$(serial_of "$SEATED")
printf 'card-bind = any-user\n' >> "$CONFIG"
restart_daemon --reader sim || exit 1
runuser -u "$STANDING" -- "$BIN/tokenpin" --socket "$SOCKET" toggle token on --pin-stdin < <(printf '739154\n123456\n') \
    >"$WORK/out" 2>&1
check "card-bind = any-user, a card another record binds: refused (77)" [ $? = 77 ]
check "the refusal does not name the other user's card" bash -c "! grep -qi '${SEATED_SERIAL: -8}' '$WORK/out'"
sed -i '/^card-bind/d' "$CONFIG"
stop_daemon
STATE=$MAIN_STATE

# 10. `su victim` and remote logins: PIN only, counted on their own counter; the victim's PIN and card are safe.
printf 'retries-max = 5\n' >> "$CONFIG"
start_daemon --reader sim || exit 1
expect_code "the victim verifies (the counter takes retries-max = 5)" 0 client --user "$VICTIM" verify --method pin <<<482916
MODULE="$PAM_MODULE socket=$SOCKET timeout=10"
# The shipped line (pam-auth-update's [success=end default=ignore]), before a module that never says yes.
pam_service SHIPPED "auth [success=done default=ignore] $MODULE" "auth required pam_deny.so" \
    "account required pam_permit.so" "session required pam_permit.so"
su_as() { runuser -u "$1" -- $ATTACK "$SOCKET" su "${@:2}"; }
prompts_of() { python3 -c 'import json,sys; print("|".join(json.load(open(sys.argv[1]))["prompts"]))' "$1"; }
if [ "$SANDBOXED" = 1 ] && [ -e /etc/pam.d/su ]; then
    mount --bind "/etc/pam.d/$SHIPPED" /etc/pam.d/su
    before_card=$(card_tries_of "$VICTIM")
    for n in 1 2 3 4 5; do su_as "$MALLORY" "$VICTIM" 000000 000000 >"$WORK/su.$n" 2>&1; done
    check "su victim (5 wrong answers): only a PIN was asked, never the card ($(prompts_of "$WORK/su.1"))" \
        bash -c "! grep -q 'Card PIN' '$WORK'/su.*"
    check "su victim: the victim's PIN counter is untouched ($(remaining "$VICTIM") of 5)" test "$(remaining "$VICTIM")" = 5
    check "su victim: the victim's card PIN tries are untouched" test "$(card_tries_of "$VICTIM")" = "$before_card"
    status_of "$VICTIM" >"$WORK/status"
    check "status: otherFailures 5, otherLocked" python3 -c '
import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if s["otherFailures"]==5 and s["otherLocked"] else 1)' "$WORK/status"
    check "status: the last such failure was su by the attacker" python3 -c '
import json,sys; l=json.load(open(sys.argv[1]))["otherLast"]
sys.exit(0 if l["class"]=="other" and l["service"]=="su" and l["invokerUID"]==int(sys.argv[2]) and l["at"] else 1)' \
        "$WORK/status" "$(uid_of "$MALLORY")"
    su_as "$MALLORY" "$VICTIM" 482916 >"$WORK/su.6" 2>&1
    check "a sixth su victim: nothing is asked (locked for su and remote logins)" test -z "$(prompts_of "$WORK/su.6")"
    check "a sixth su victim: the module says why" grep -qi "su and remote" "$WORK/su.6"
    "$TOKENPIN" --socket "$SOCKET" --user "$VICTIM" --pin-stdin verify --method pin <<<482916 >"$WORK/out" 2>&1
    check "the victim's own verify works and reports the failures" grep -q "5 failed attempts from su by $MALLORY" "$WORK/out"
    check "the victim's own success clears the counter" test "$(status_of "$VICTIM" | json_field otherFailures)" = 0
    # A su victim parked at its prompt holds nothing the victim's own verification needs.
    as_mallory $ATTACK "$SOCKET" su-park "$VICTIM" 1 15 >"$WORK/park.one" 2>&1 &
    parker=$!
    wait_parked "$WORK/park.one"
    check "a su victim parked at its PIN prompt" grep -q '"parked": 1' "$WORK/park.one"
    victim_ok "a su victim parked at its PIN prompt"
    kill "$parker" 2>/dev/null; wait "$parker" 2>/dev/null
    # pam-other-user = deny: su to another user is refused before anything is asked.
    printf 'pam-other-user = deny\n' >> "$CONFIG"; kill -HUP "$DAEMON_PID"; sleep 0.5
    su_as "$MALLORY" "$VICTIM" 000000 >"$WORK/su.deny" 2>&1
    check "pam-other-user = deny: su victim is refused without a prompt" test -z "$(prompts_of "$WORK/su.deny")"
    sed -i '/^pam-other-user/d' "$CONFIG"; kill -HUP "$DAEMON_PID"; sleep 0.5
    umount /etc/pam.d/su
else
    echo "# skipped: real su needs the sandbox's mount namespace for its PAM file"
fi
# A remote login (sshd, PAM_RHOST set): with pam-remote = ignore (the default) the module steps aside before anything
# is asked; sshd's PasswordAuthentication, which answers every prompt with the password, spends nothing.
before_card=$(card_tries_of "$VICTIM"); before_pin=$(remaining "$VICTIM")
pw=$(password_of "$VICTIM")
pamtester -I rhost=203.0.113.7 "$SHIPPED" "$VICTIM" authenticate < <(printf '%s\n%s\n' "$pw" "$pw") >"$WORK/out" 2>&1
check "remote login, pam-remote = ignore: nothing is asked" bash -c "! grep -qE 'PIN' '$WORK/out'"
check "remote login: the card PIN tries and the PIN counter are untouched" \
    test "$(card_tries_of "$VICTIM"):$(remaining "$VICTIM")" = "$before_card:$before_pin"
printf 'pam-remote = pin\n' >> "$CONFIG"; kill -HUP "$DAEMON_PID"; sleep 0.5
pamtester -I rhost=203.0.113.7 "$SHIPPED" "$VICTIM" authenticate < <(printf '000000\n000000\n') >"$WORK/out" 2>&1
check "remote login, pam-remote = pin: the PIN is asked, never the card" \
    bash -c "grep -q 'tokenpin PIN for ' '$WORK/out' && ! grep -q 'Card PIN' '$WORK/out'"
check "remote login: a wrong PIN counts on the remote/other counter" \
    test "$(status_of "$VICTIM" | json_field otherFailures):$(remaining "$VICTIM")" = "1:$before_pin"
check "remote login: the card was not touched" test "$(card_tries_of "$VICTIM")" = "$before_card"
sed -i '/^pam-remote/d' "$CONFIG"
alive "su and remote logins"

# 11. Budgets: 130 parked `su victim` by one user refuse no one else's login, and hold the victim's lock for at most
#     daemon-pam-prompt-timeout.
printf 'daemon-wait-timeout = 30\ndaemon-pam-prompt-timeout = 5\n' >> "$CONFIG"
restart_daemon --reader sim || exit 1
new_user THIRD || exit 1
client --user "$THIRD" enrol < <(printf '615283\n615283\n') >/dev/null
pam_service REQUIRE "auth [success=1 default=die] $MODULE" "auth required pam_deny.so" "auth required pam_permit.so" \
    "account required pam_permit.so"
if [ "$SANDBOXED" = 1 ] && [ -e /etc/pam.d/su ]; then
    mount --bind "/etc/pam.d/$SHIPPED" /etc/pam.d/su
    as_mallory $ATTACK "$SOCKET" su-park "$VICTIM" 130 25 >"$WORK/park.flood" 2>&1 &
    parker=$!
    wait_parked "$WORK/park.flood"
    check "130 su victim started, one at its prompt" grep -q '"parked": [1-9]' "$WORK/park.flood"
    sleep 3  # every su connected by now
    victim_ok "130 parked su victim"
    start=$(date +%s.%N)
    expect_code "130 parked su victim: another user's login on the 'require the PIN' stack" 0 \
        pamtester "$REQUIRE" "$THIRD" authenticate <<<615283
    took=$(echo "$(date +%s.%N) - $start" | bc)
    if (( $(echo "$took > $LONGEST" | bc) )); then LONGEST=$took; fi
    kill "$parker" 2>/dev/null; wait "$parker" 2>/dev/null
    # The flood's su (setuid root, which mallory's parker may not signal) end as root ends them; the daemon's attempts
    # waiting for their turn then end at it, as their connections have.
    pkill -KILL -U "$MALLORY" -x su 2>/dev/null
    for _ in $(seq 100); do pgrep -U "$MALLORY" -x su >/dev/null || break; sleep 0.1; done
    sleep 1
    # One su victim left at its prompt holds its turn for daemon-pam-prompt-timeout (5 s here), not the 30 s wait.
    as_mallory $ATTACK "$SOCKET" su-park "$VICTIM" 1 20 >"$WORK/park.timeout" 2>&1 &
    parker=$!
    wait_parked "$WORK/park.timeout"
    check "the one su victim left reached its prompt" grep -q '"parked": 1' "$WORK/park.timeout"
    su_as "$MALLORY" "$VICTIM" 000000 >"$WORK/su.next" 2>&1
    after=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["firstPromptAfter"])' "$WORK/su.next" 2>/dev/null)
    echo "# the parked su: $(head -c 300 "$WORK/park.timeout"); the next su: $(head -c 600 "$WORK/su.next")"
    check "the next su victim is asked once the parked one timed out (${after:-never} s, 3 to 8)" \
        python3 -c 'import sys; sys.exit(0 if sys.argv[1] not in ("", "None") and 3 <= float(sys.argv[1]) <= 8 else 1)' "$after"
    kill "$parker" 2>/dev/null; wait "$parker" 2>/dev/null
    umount /etc/pam.d/su
else
    echo "# skipped: real su needs the sandbox's mount namespace for its PAM file"
fi
sed -i '/^daemon-wait-timeout = 30/d; /^daemon-pam-prompt-timeout/d' "$CONFIG"
alive "budgets"

# 12. Guessing login passwords through enrol: one check at a time per uid, 2 s doubling to 60 s after each failure.
new_user GUESSER || exit 1
runuser -u "$GUESSER" -- $ATTACK "$SOCKET" guess 6 32 >"$WORK/guess" 2>&1
GUESS_RATE=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["perSecond"])' "$WORK/guess" 2>/dev/null)
check "password guesses through enrol from one uid: at most 3 reach PAM in 6 s ($(head -c 300 "$WORK/guess"))" \
    python3 -c 'import json,sys; g=json.load(open(sys.argv[1])); sys.exit(0 if g["rejected"] <= 3 and g["delayed"] > 0 and g["retryAfter"] else 1)' "$WORK/guess"
check "the shipped /etc/pam.d/tokenpin-enrol uses pam_faillock (preauth, authfail)" \
    bash -c "grep -q 'pam_faillock.so preauth' '$ROOT/pam/tokenpin-enrol' && grep -q 'pam_faillock.so authfail' '$ROOT/pam/tokenpin-enrol'"
new_user LOCKED_OUT || exit 1
# The shipped file (as lib.sh installs it, its tallies in this run's directory): three wrong passwords lock the right
# one out too.
pam_service FAILLOCK "${ENROL_LINES[@]}"
for _ in 1 2 3; do pamtester "$FAILLOCK" "$LOCKED_OUT" authenticate <<<wrong >/dev/null 2>&1; done
expect_code "after three wrong passwords the shipped stack refuses the right one (pam_faillock)" 1 \
    pamtester "$FAILLOCK" "$LOCKED_OUT" authenticate <<<"$(password_of "$LOCKED_OUT")"
stop_daemon

# 14. The audit trail: every verification, failure, lock, bind, unbind, import and login-password check is one journal
#     entry through the journal's native protocol (a socket of this run's own here), with the TOKENPIN_* fields.
python3 - "$WORK/journal.socket" "$WORK/journal.entries" <<'PY' &
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a") as out:
    while True:
        data, fields, i = s.recv(1 << 17), {}, 0
        while i < len(data):
            end = data.index(b"\n", i)
            line = data[i:end]
            if b"=" in line:
                name, value = line.split(b"=", 1)
                i = end + 1
            else:  # NAME \n <64-bit little-endian length> value \n
                name, size = line, struct.unpack("<Q", data[end + 1:end + 9])[0]
                value, i = data[end + 9:end + 9 + size], end + 10 + size
            fields[name.decode()] = value.decode(errors="replace")
        out.write(json.dumps(fields) + "\n")
        out.flush()
PY
JOURNAL_PID=$!
for _ in $(seq 50); do [ -S "$WORK/journal.socket" ] && break; sleep 0.1; done
JOURNAL=$WORK/journal.socket start_daemon --reader sim || exit 1
new_user AUDITED && new_user AUDIT_IMPORT || exit 1
runuser -u "$AUDITED" -- "$TOKENPIN" "${CLI_ARGS[@]}" enrol < <(printf 'wrong\n') >/dev/null 2>&1
sleep 2.2  # the login-password check's delay after the wrong password
runuser -u "$AUDITED" -- "$TOKENPIN" "${CLI_ARGS[@]}" enrol \
    < <(printf '%s\n739154\n739154\n' "$(password_of "$AUDITED")") >/dev/null 2>&1
for pin in 000000 739154; do runuser -u "$AUDITED" -- "$TOKENPIN" "${CLI_ARGS[@]}" verify <<<"$pin" >/dev/null 2>&1; done
for _ in 1 2 3 4 5; do runuser -u "$AUDITED" -- "$TOKENPIN" "${CLI_ARGS[@]}" verify <<<000000 >/dev/null 2>&1; done
tp --user "$VICTIM" toggle token off --pin-stdin <<<482916 >/dev/null 2>&1
tp --user "$VICTIM" toggle token on --generate-key --yes --pin-stdin < <(printf '482916\n123456\n12345678\n') >/dev/null 2>&1
hostile_record "$WORK/audit-import.json" "r['user'] = '$AUDIT_IMPORT'"
stage_import AUDIT_STORE "$AUDIT_IMPORT" "$AUDIT_IMPORT" "$WORK/audit-import.json" || exit 1
runuser -u "$AUDIT_IMPORT" -- "$TOKENPIN" "${CLI_ARGS[@]}" --store "$AUDIT_STORE" import <<<"$(password_of "$AUDIT_IMPORT")" \
    >/dev/null 2>&1
stop_daemon
kill "$JOURNAL_PID" 2>/dev/null; wait "$JOURNAL_PID" 2>/dev/null
for event in password-refused password-accepted verify-failed verified locked unbound bound imported; do
    check "audit trail: a $event entry with MESSAGE_ID and the TOKENPIN_* fields" python3 -c '
import json, re, sys
entries = [json.loads(l) for l in open(sys.argv[1])]
found = [e for e in entries if e.get("TOKENPIN_EVENT") == sys.argv[2]]
ok = found and all(re.fullmatch("[0-9a-f]{32}", e["MESSAGE_ID"]) and e.get("TOKENPIN_USER") and "TOKENPIN_RESULT" in e
                   and "TOKENPIN_INVOKER_UID" in e and "TOKENPIN_CLASS" in e for e in found)
sys.exit(0 if ok else 1)' "$WORK/journal.entries" "$event"
done
check "audit trail: one MESSAGE_ID per kind" python3 -c '
import json, sys
ids = {}
for e in map(json.loads, open(sys.argv[1])): ids.setdefault(e["TOKENPIN_EVENT"], set()).add(e["MESSAGE_ID"])
flat = [i for s in ids.values() for i in s]
sys.exit(0 if all(len(s) == 1 for s in ids.values()) and len(flat) == len(set(flat)) else 1)' "$WORK/journal.entries"
check "audit trail: the remaining tries of a failure, the method of a success" python3 -c '
import json, sys
e = [json.loads(l) for l in open(sys.argv[1])]
sys.exit(0 if any(x.get("TOKENPIN_REMAINING") == "4" for x in e if x["TOKENPIN_EVENT"] == "verify-failed")
         and any(x.get("TOKENPIN_METHOD") == "pin" for x in e if x["TOKENPIN_EVENT"] == "verified") else 1)' "$WORK/journal.entries"
check "audit trail: never a secret" bash -c "! grep -qE '739154|482916|123456|12345678|Pw-' '$WORK/journal.entries'"

# 13. A look-alike card (the victim's identity, other keys) gets no card PIN: a PIV binding records the card's
#     card-authentication key 9E and checks it (GENERAL AUTHENTICATE on a fresh challenge, no PIN) first.
if [ "$SANDBOXED" = 1 ] && command -v yubico-piv-tool >/dev/null; then
    ykpiv() { yubico-piv-tool --reader "$READER" "$@" 2>&1; }
    printf 'on-card-removal = lock\nlock-grace = 3\n' >> "$CONFIG"
    # A loginctl of this run's own, which says which sessions it would lock.
    printf '#!/bin/sh\ncase "$1" in show-user) echo c9 ;; lock-session) echo "$@" >>%s ;; esac\n' "$WORK/locked" \
        >"$WORK/loginctl"
    chmod 0755 "$WORK/loginctl"
    mount --bind "$WORK/loginctl" /usr/bin/loginctl
    start_sim "$WORK/real.json" 0C0FFEE7 --reset --profile yubikey || not_ok "the victim's PIV card is inserted"
    ykpiv -a generate -s 9d -A ECCP256 >/dev/null; ykpiv -a generate -s 9e -A ECCP256 >/dev/null
    start_daemon || exit 1
    new_user PIVOWNER || exit 1
    client --user "$PIVOWNER" enrol < <(printf '739154\n739154\n') >/dev/null
    expect_code "the victim binds the PIV card (PIN, card PIN)" 0 \
        client --user "$PIVOWNER" toggle token on --app piv < <(printf '739154\n123456\n')
    expect_code "the victim verifies by token" 0 client --user "$PIVOWNER" verify --method token <<<123456
    stop_sim
    start_sim "$WORK/fake.json" 0C0FFEE7 --reset --profile yubikey || not_ok "the look-alike is inserted"
    ykpiv -a generate -s 9d -A ECCP256 >/dev/null; ykpiv -a generate -s 9e -A ECCP256 >/dev/null
    sleep 4  # past lock-grace
    check "the look-alike card cancelled no card-removal lock" grep -q "lock-session c9" "$WORK/locked"
    client --user "$PIVOWNER" verify --method token <<<654321 >"$WORK/out" 2>&1
    check "a verify with the look-alike card: token unavailable (6)" [ $? = 6 ]
    fake_tries=$("$BIN/tokenpin" --local --store "$WORK/no-store" --config "$CONFIG" --reader "$READER" \
        --json readers --app piv | python3 -c 'import json,sys; print(json.load(sys.stdin)["readers"][0]["cardTriesLeft"])')
    check "the look-alike card was sent no card PIN (its tries: ${fake_tries:-?})" test "$fake_tries" = 3
    stop_sim
    start_sim "$WORK/real.json" 0C0FFEE7 --profile yubikey || not_ok "the victim's card is back"
    expect_code "the victim's own card still verifies" 0 client --user "$PIVOWNER" verify --method token <<<123456
    stop_sim
    umount /usr/bin/loginctl
    stop_daemon
else
    echo "# skipped: the look-alike card needs the sandbox's pcscd and yubico-piv-tool"
fi

echo "longest stall of the victim: ${LONGEST}s (limit ${STALL_LIMIT}s)"
finish
