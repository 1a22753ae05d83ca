#!/usr/bin/env bash
# Two users created for the test, driven with runuser and setpriv: each acts on their own record only,
# cannot read the daemon's state, cannot see the other's events; root may act on both.
. "$(dirname "$0")/lib.sh"

start_daemon || exit 1
new_user ALICE && new_user BOB || { echo "cannot create users"; exit 1; }
as_alice() { runuser -u "$ALICE" -- "$TOKENPIN" "${CLI_ARGS[@]}" "$@"; }
as_bob() { setpriv --reuid="$(id -u "$BOB")" --regid="$(id -g "$BOB")" --clear-groups -- "$TOKENPIN" "${CLI_ARGS[@]}" "$@"; }

expect_code "alice enrols herself (login password first)" 0 as_alice enrol < <(printf '%s\n482916\n482916\n' "$(password_of "$ALICE")")
expect_code "bob enrols himself (setpriv)" 0 as_bob enrol < <(printf '%s\n739154\n739154\n' "$(password_of "$BOB")")
check "records are named by the peer's uid" [ -f "$STATE/$ALICE.json" ] && [ -f "$STATE/$BOB.json" ]
check "alice's status is hers" [ "$(as_alice status | json_field user)" = "$ALICE" ]
expect_code "alice cannot read bob's status (77)" 77 as_alice --user "$BOB" status
expect_code "alice cannot verify as bob (77)" 77 as_alice --user "$BOB" verify <<<739154
expect_code "alice cannot reset bob's lock (77)" 77 as_alice --user "$BOB" reset <<<"AAAAA-AAAAA-AAAAA-AAAAA-AAAAA-AAAAA"
expect_code "alice cannot change bob's PIN (77)" 77 as_alice --user "$BOB" change < <(printf '739154\n615283\n615283\n')
# A well-formed local record of alice's in bob's own store: the daemon, not the CLI, must refuse it.
"$TOKENPIN" --local --store "$WORK/template" --config "$CONFIG" enrol --pin-stdin < <(printf '482916\n482916\n') >/dev/null 2>&1
record_json "$WORK/template/root.json" |
    python3 -c 'import json,sys; r=json.load(sys.stdin); r["user"]=sys.argv[2]; json.dump(r, open(sys.argv[1], "w"))' \
        "$WORK/alices.json" "$ALICE"
stage_import IMPORT "$BOB" "$ALICE" "$WORK/alices.json"
expect_code "bob cannot import a record as alice (77)" 77 as_bob --store "$IMPORT" --user "$ALICE" import
expect_code "bob cannot watch alice (77)" 77 as_bob --user "$ALICE" watch
expect_code "alice cannot read the state directory" 2 runuser -u "$ALICE" -- ls "$STATE"
expect_code "alice cannot read bob's record file" 1 runuser -u "$ALICE" -- cat "$STATE/$BOB.json"
expect_code "alice cannot write the state directory" 1 runuser -u "$ALICE" -- touch "$STATE/$ALICE.json"

# Alice's wrong PINs touch only her counter; her watcher sees only her events.
runuser -u "$ALICE" -- "$TOKENPIN" "${CLI_ARGS[@]}" watch >"$WORK/alice-watch" 2>"$WORK/alice-watch.err" &
WATCH=$!
# An event before the subscription is not shown to the watcher; every one after this line is.
check "alice's watcher says it watches her events" wait_for_line "$WORK/alice-watch.err" \
    "Watching tokenpind's events for $ALICE."
expect_code "bob's wrong PIN (1)" 1 as_bob verify <<<000000
expect_code "alice's wrong PIN (1)" 1 as_alice verify <<<000000
for _ in $(seq 50); do [ -s "$WORK/alice-watch" ] && break; sleep 0.1; done
kill "$WATCH" 2>/dev/null; wait "$WATCH" 2>/dev/null
check "alice's watcher saw her own event first" grep -q "\"user\":\"$ALICE\"" "$WORK/alice-watch"
check "alice's watcher never saw bob" bash -c "! grep -q '$BOB' '$WORK/alice-watch'"
check "bob's counter: 4" [ "$(as_bob status | json_field remaining)" = 4 ]
check "alice's counter: 4" [ "$(as_alice status | json_field remaining)" = 4 ]

# Root may act on anyone.
check "root reads alice's status" [ "$(client --user "$ALICE" status | json_field remaining)" = 4 ]
expect_code "root verifies for bob" 0 client --user "$BOB" verify <<<739154
check "bob's counter restored by root's verification" [ "$(as_bob status | json_field remaining)" = 5 ]
check "alice's counter untouched" [ "$(as_alice status | json_field remaining)" = 4 ]

# Issue 25: only root acts as the administrator; a user unenrols only after their own PIN.
raw_as_bob() {  # raw_as_bob JSON: one request line from bob's uid, the daemon's last line printed
    setpriv --reuid="$(id -u "$BOB")" --regid="$(id -g "$BOB")" --clear-groups -- /usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(sys.argv[1]); s.sendall(sys.argv[2].encode() + b"\n")
print(s.makefile().readline().strip())' "$SOCKET" "$1"
}
REPLY_RESET=$(raw_as_bob '{"v":2,"type":"request","op":"reset","admin":true}')
check "bob's reset with admin: permission-denied ($REPLY_RESET)" grep -q '"code":"permission-denied"' <<<"$REPLY_RESET"
REPLY_UNENROL=$(raw_as_bob '{"v":2,"type":"request","op":"unenrol","admin":true}')
check "bob's unenrol with admin: permission-denied ($REPLY_UNENROL)" grep -q '"code":"permission-denied"' <<<"$REPLY_UNENROL"
expect_code "bob's unenrol with a wrong PIN removes nothing (1)" 1 as_bob unenrol <<<000000
check "... bob's record is there" [ -f "$STATE/$BOB.json" ]
expect_code "bob unenrols with his PIN" 0 as_bob unenrol <<<739154
check "... bob's record is gone, alice's stays" bash -c "[ ! -e '$STATE/$BOB.json' ] && [ -f '$STATE/$ALICE.json' ]"
expect_code "alice cannot unenrol bob (77)" 77 as_alice --user "$BOB" unenrol <<<739154
finish
