#!/usr/bin/env bash
# Every flow through a real tokenpind on a private socket and state dir; bad requests answered with errors while
# other clients are served; SIGHUP reload; SIGTERM drain; socket activation.
. "$(dirname "$0")/lib.sh"

start_daemon || exit 1
check "state dir is 0700" [ "$(stat -c %a "$STATE")" = 700 ]
check "socket is 0666" [ "$(stat -c %a "$SOCKET")" = 666 ]
expect_code "verify before enrol: not enrolled (4)" 4 client verify </dev/null
printf '482916\n482916\n' | client enrol --recovery-key-file "$WORK/recovery-key" >/dev/null
KEY=$(cat "$WORK/recovery-key" 2>/dev/null)
check "enrol shows a recovery key" [ ${#KEY} = 35 ]
expect_code "second enrol refused (2)" 2 client enrol < <(printf '111111\n111111\n')
check "record file is 0600" [ "$(stat -c %a "$STATE/root.json")" = 600 ]
expect_code "verify right PIN (0)" 0 client verify <<<482916
expect_code "verify wrong PIN (1)" 1 client verify <<<000000
check "wrong PIN reports 3 tries left" [ "$(client verify <<<000001 | json_field remaining)" = 3 ]
expect_code "policy refuses a sequence (5)" 5 client change < <(printf '482916\n123456\n123456\n')
expect_code "change (0)" 0 client change < <(printf '482916\n739154\n739154\n')
expect_code "new PIN verifies" 0 client verify <<<739154
expect_code "toggle pin off refused (2)" 2 client toggle pin off
check "types lists pin and token" [ "$(client types | json_field types | grep -o "'type'" | wc -l)" = 2 ]
for _ in 1 2 3; do client verify <<<000000 >/dev/null; done
check "fourth wrong PIN says last try" [ "$(client verify <<<000000 | json_field lastTry)" = True ]
expect_code "fifth wrong PIN locks (3)" 3 client verify <<<000000
expect_code "locked: even the right PIN (3)" 3 client verify <<<739154
check "status shows locked" [ "$(client status | json_field locked)" = True ]
expect_code "reset with the recovery key (0)" 0 client reset < <(printf '%s\n615283\n615283\n' "$KEY")
expect_code "verify after reset (0)" 0 client verify <<<615283
expect_code "malformed recovery key (1)" 1 client reset < <(printf 'nope\n')

# Bad requests get an error and a closed connection; a stalled half-request does not block others.
exec 7<>/dev/null
python3 - "$SOCKET" >"$WORK/bad" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b'{"v":1,"type":"requ'); time.sleep(3)
PY
STALL=$!
raw() { python3 -c 'import socket,sys
s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(sys.stdin.buffer.read())
if sys.argv[2]=="eof": s.shutdown(socket.SHUT_WR)
print(s.makefile().readline().strip())' "$SOCKET" "${1:-}"; }
check "garbage: protocol-malformed" grep -q protocol-malformed <(printf 'garbage\n' | raw)
check "oversized: protocol-oversized" grep -q protocol-oversized <(head -c 70000 /dev/zero | tr '\0' x | raw)
check "half-finished: protocol-truncated" grep -q protocol-truncated <(printf '{"v":1,"type":"request"' | raw eof)
check "wrong version: protocol-unsupported-version" grep -q unsupported-version <(printf '{"v":9,"type":"request","op":"ping"}\n' | raw)
check "unknown op: protocol-unknown-type" grep -q protocol-unknown-type <(printf '{"v":1,"type":"request","op":"rm"}\n' | raw)
check "binary: protocol-malformed" grep -q protocol-malformed <({ head -c 3000 /dev/urandom | tr '\n' x; echo; } | raw)
expect_code "others are served meanwhile" 0 client verify <<<615283
check "nothing above counted" [ "$(client status | json_field remaining)" = 5 ]
kill "$STALL" 2>/dev/null; wait "$STALL" 2>/dev/null

# Import: a local record moves in once; never over an existing daemon record.
LOCAL=$WORK/local; mkdir -m 0700 "$LOCAL"
"$TOKENPIND" --help >/dev/null
USER2=importee
printf '{"version":1}' > "$WORK/bogus.json"
stage_import IMPORT root "$USER2" "$WORK/bogus.json"
expect_code "import of a corrupt record refused (65)" 65 client --store "$IMPORT" --user "$USER2" import
stage_import IMPORT root root "$STATE/root.json"
expect_code "import over an existing record refused (2)" 2 client --store "$IMPORT" import
check "the refused import left the local record" [ -f "$IMPORT/root.json" ]
stage_import IMPORT root "$USER2" "$STATE/root.json"
expect_code "import of root's record as another user refused (65)" 65 client --store "$IMPORT" --user "$USER2" import

# SIGHUP reloads; a broken file keeps the old settings.
printf 'kdf-memory-mib = 8\nkdf-passes = 1\nretries-max = 7\n' > "$CONFIG"
kill -HUP "$DAEMON_PID"; sleep 0.3
check "SIGHUP reloads" grep -q "configuration reloaded" "$WORK/daemon.log"
printf 'nonsense\n' > "$CONFIG"; kill -HUP "$DAEMON_PID"; sleep 0.3
check "broken config keeps the old settings" grep -q "configuration not reloaded" "$WORK/daemon.log"
expect_code "still serving" 0 client verify <<<615283
printf 'kdf-memory-mib = 8\nkdf-passes = 1\n' > "$CONFIG"

BEFORE=$(client status | json_field remaining)
# SIGTERM while a client sits at a prompt: the prompt is abandoned, nothing counted, clean exit.
python3 - "$SOCKET" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b'{"v":1,"type":"request","op":"verify"}\n'); time.sleep(5)
PY
AT_PROMPT=$!
sleep 0.3
kill -TERM "$DAEMON_PID"; wait "$DAEMON_PID"; CODE=$?
DAEMON_PID=
check "SIGTERM exits 0" [ "$CODE" = 0 ]
check "socket removed at exit" [ ! -e "$SOCKET" ]
kill "$AT_PROMPT" 2>/dev/null; wait "$AT_PROMPT" 2>/dev/null

# Socket activation: systemd-socket-activate passes the listening socket as fd 3.
if command -v systemd-socket-activate >/dev/null; then
    systemd-socket-activate -l "$SOCKET" "$TOKENPIND" --state-dir "$STATE" --config "$CONFIG" --journal-socket none \
        >>"$WORK/daemon.log" 2>&1 &
    DAEMON_PID=$!
    for _ in $(seq 50); do [ -S "$SOCKET" ] && break; sleep 0.05; done
    STATUS=$(client status)
    check "socket activation: counter kept across restarts" [ "$(echo "$STATUS" | json_field remaining)" = "$BEFORE" ]
    check "socket activation logged" grep -q "socket systemd passed" "$WORK/daemon.log"
    stop_daemon
fi
finish
