#!/usr/bin/env bash
# The hostile local user (issue 8): each class of attack against a real tokenpind, run by an unprivileged
# temporary user, while root verifies another user the way login and sudo do. After each attack: the daemon is
# alive, the victim's verification completed within STALL_LIMIT seconds, nothing was counted that should not
# be and everything that should be was, and PAM never said success or PAM_IGNORE after a secret was sent.
. "$(dirname "$0")/lib.sh"
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
    client --user "$VICTIM" verify <<<482916 >"$WORK/victim" 2>&1
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
template=$(ls "$LOCAL"/*.json | head -1)
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
check "import with a wrong login password: refused (1)" [ $? = 1 ]
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
tp --user "$VICTIM" toggle token on --generate-key --yes --pin-stdin < <(printf '482916\n12345678\n123456\n') >/dev/null 2>&1 \
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
start=$(date +%s.%N)
client --user "$VICTIM" verify --method pin <<<482916 >"$WORK/out" 2>&1  # scripts name the type once a token is on
took=$(echo "$(date +%s.%N) - $start" | bc)
check "a PIN verify while a token verify waits at the card-PIN prompt: busy within the wait bound (${took}s)" \
    grep -q '"code":"busy"' "$WORK/out"
expect_code "another user verifies meanwhile" 0 client --user "$MALLORY" verify <<<739154
start=$(date +%s)
kill -TERM "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null
took=$(( $(date +%s) - start ))
DAEMON_PID=
check "SIGTERM with a token verify parked at the card-PIN prompt: the daemon exits within 5 s (${took}s)" [ "$took" -le 5 ]
wait "$parked" 2>/dev/null
check "the parked verify was at the card-PIN prompt" grep -q 'card-pin' "$WORK/park"

echo "longest stall of the victim: ${LONGEST}s (limit ${STALL_LIMIT}s)"
finish
