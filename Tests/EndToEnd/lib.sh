# Shared helpers for the service end-to-end tests. Source it; it sets up a private directory,
# counts results and cleans up (daemons it started, PAM files, temporary users) on exit.
# Never touches /run/tokenpin, /var/lib/tokenpin, /etc/systemd or another PAM service file.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=${TOKENPIN_BIN:-$ROOT/.build/debug}
TOKENPIND=$BIN/tokenpind
TOKENPIN=$BIN/tokenpin
PAM_MODULE=${PAM_MODULE:-$ROOT/.build/pam/pam_tokenpin.so}

PASSED=0
FAILED=0
WORK=$(mktemp -d /tmp/tokenpin-service.XXXXXX)
chmod 0755 "$WORK"   # other users reach the socket through it; the state dir inside stays 0700
SOCKET=$WORK/socket
STATE=$WORK/state
CONFIG=$WORK/tokenpin.conf
DAEMON_PID=
CLEANUP_USERS=()
CLEANUP_FILES=()
printf 'kdf-memory-mib = 8\nkdf-passes = 1\n' > "$CONFIG"
# How the suites drive the daemon: the real CLI on the private socket, one JSON object on stdout, every secret a
# line of standard input. Its local store is a directory that never exists (XDG_STATE_HOME: `--store` would mean
# local mode), so no local record of whoever runs it gets in the way (`tokenpin import` stages one, see
# stage_import).
CLI_ARGS=(--socket "$SOCKET" --json --pin-stdin)
export XDG_STATE_HOME=$WORK/no-local-state

ok() { PASSED=$((PASSED + 1)); echo "ok - $1"; }
not_ok() { FAILED=$((FAILED + 1)); echo "not ok - $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name"; fi; }

# expect_code NAME CODE COMMAND...: the command exits with CODE.
expect_code() {
    local name=$1 want=$2; shift 2
    "$@" >"$WORK/out" 2>"$WORK/err"
    local got=$?
    if [ "$got" = "$want" ]; then ok "$name"; else not_ok "$name (exit $got, wanted $want: $(head -c 300 "$WORK/out" "$WORK/err"))"; fi
}

start_daemon() {
    # Never the machine's journal: the audit trail goes to the log (JOURNAL names a socket of the suite's own).
    "$TOKENPIND" --socket "$SOCKET" --state-dir "$STATE" --config "$CONFIG" --journal-socket "${JOURNAL:-none}" "$@" \
        >>"$WORK/daemon.log" 2>&1 &
    DAEMON_PID=$!
    for _ in $(seq 100); do [ -S "$SOCKET" ] && client status >/dev/null 2>&1 && return 0; sleep 0.05; done
    echo "tokenpind did not start:"; cat "$WORK/daemon.log"; return 1
}

stop_daemon() {
    if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
        kill -TERM "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null
    fi
    DAEMON_PID=
}

# wait_for_line FILE TEXT: waits (up to 30 s, a bound for a broken run) until FILE has a line containing TEXT, e.g.
# `tokenpin watch`'s "Watching tokenpind's events for ..." on its stderr: a signal to wait for, never a sleep.
wait_for_line() {
    for _ in $(seq 600); do grep -qF -- "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
    return 1
}

# client ARGS...: tokenpin against this daemon, as root (`--user NAME` acts for NAME); exits with the CLI's code.
client() { "$TOKENPIN" "${CLI_ARGS[@]}" "$@"; }

# stage_import VAR OWNER NAME FILE: a new store directory owned by OWNER holding FILE as NAME's local record, which
# `tokenpin --store DIR import` (run as OWNER, with `--user NAME` when NAME is someone else) moves into the daemon;
# the directory in VAR. The CLI reads the record before sending it, so a file it cannot read as a record is
# refused there (65) and never reaches the daemon; the daemon's own checks of hostile records are in the Swift
# tests (HostileRecordDaemonTests).
stage_import() {
    local dir
    dir=$(mktemp -d "$WORK/import.XXXXXX") || return 1
    cp "$4" "$dir/$3.json" && chmod 0600 "$dir/$3.json" && chown -R "$2:" "$dir" && chmod 0700 "$dir" || return 1
    printf -v "$1" '%s' "$dir"
}

# record_json FILE: prints the JSON of the record file FILE, in either record format (legacy JSON, or the two-copy
# file tokenpin writes by default; docs/security.md "The record file"), through the test-only reader record.py.
# A test that edits a record writes plain JSON, which tokenpin still reads (and upgrades on its next save).
RECORD_PY=$ROOT/Tests/EndToEnd/record.py
record_json() { python3 "$RECORD_PY" json "$1"; }

# json_field FIELD: reads one JSON line on stdin and prints FIELD (a dotted path).
json_field() { python3 -c 'import json,sys
value=json.loads(sys.stdin.readline())
for part in sys.argv[1].split("."): value=value[part]
print(value)' "$1"; }

# new_user VAR: creates a temporary user (removed at exit) with the login password `password_of NAME`, and
# stores its name in VAR.
new_user() {
    local name tries=0
    # A random name, drawn again in the rare case it is taken.
    until name="tpt$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')" && ! id "$name" >/dev/null 2>&1; do
        ((++tries < 10)) || return 1
    done
    useradd --no-create-home --shell /usr/sbin/nologin "$name" || return 1
    CLEANUP_USERS+=("$name")
    printf '%s:%s\n' "$name" "$(password_of "$name")" | chpasswd || return 1
    printf -v "$1" '%s' "$name"
}

# password_of NAME: the login password new_user gave NAME.
password_of() { printf 'Pw-%s-7q' "$1"; }

# pam_service VAR LINE...: writes a uniquely named /etc/pam.d file (removed at exit), its name in VAR.
pam_service() {
    local var=$1; shift
    local name tries=0
    # Lower case (PAM lowers a service's name before it looks for its file), and created only if new (noclobber),
    # drawn again in the rare case the name is taken.
    until name="tokenpin-test-$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')" \
        && (set -C; printf '%s\n' "$@" >"/etc/pam.d/$name") 2>/dev/null; do
        ((++tries < 10)) || return 1
    done
    CLEANUP_FILES+=("/etc/pam.d/$name")
    printf -v "$var" '%s' "$name"
}

# enter_sandbox [--pinpad] [COMMAND...]: runs this suite again inside Simulator/pcscd-sandbox (a private pcscd with
# vpcd readers) unless it already runs there; skipped, saying why, without pcscd, vpcd, tokenpin-sim or a COMMAND.
# With --pinpad the sandbox's reader "tokenpin pinpad 0" is the virtual pinpad (Simulator/pinpad, make pinpad), and
# inside it READER and PORT name it (lib.sh's start_sim puts the card behind it), KEYS is its keypad script (one
# entry per PIN request: a PIN, CANCEL or TIMEOUT; see keypad and entries_left) and LOG what the driver saw.
enter_sandbox() {
    local sandbox=()
    if [ "${1:-}" = --pinpad ]; then sandbox=(--pinpad); shift; fi
    if [ "${TOKENPIN_SANDBOX:-}" = 1 ]; then
        if [ ${#sandbox[@]} -gt 0 ]; then
            READER=$TOKENPIN_PINPAD_READER PORT=$TOKENPIN_PINPAD_PORT KEYS=$TOKENPIN_PINPAD_KEYS LOG=$TOKENPIN_PINPAD_LOG
        fi
        return 0
    fi
    local needed
    for needed in pcscd "$@"; do
        command -v "$needed" >/dev/null || { echo "skipped: needs $needed"; finish; exit $?; }
    done
    if [ ! -x "${TOKENPIN_SIM_BIN:-$BIN/tokenpin-sim}" ] || ! ls /usr/lib/pcsc/drivers/serial/libifdvpcd.so* >/dev/null 2>&1; then
        echo "skipped: needs vsmartcard-vpcd and tokenpin-sim"; finish; exit $?
    fi
    if [ ${#sandbox[@]} -gt 0 ] && [ ! -e "$ROOT/.build/pinpad/libifd-tokenpin-pinpad.so" ]; then
        echo "skipped: needs the pinpad driver (make pinpad)"; finish; exit $?
    fi
    trap - EXIT; rm -rf "$WORK"
    exec "$ROOT/Simulator/pcscd-sandbox" "${sandbox[@]}" -- bash "$0"
}
# keypad ENTRY...: what the virtual pinpad's keypad "types" at the next PIN requests, one entry each.
keypad() { printf '%s\n' "$@" >"$KEYS"; }
# entries_left: how many of those entries the keypad has not used yet.
entries_left() { grep -cv '^\s*$' "$KEYS"; }

# The simulated card in the sandbox's first reader, for suites that re-executed themselves inside
# Simulator/pcscd-sandbox (READER and PORT come from its TOKENPIN_READERS and TOKENPIN_VPCD_PORTS).
READER=${TOKENPIN_READERS:-}; READER=${READER%%|*}
PORT=${TOKENPIN_VPCD_PORTS:-}; PORT=${PORT%%,*}
SIM_PID=
card_present() { opensc-tool --list-readers 2>/dev/null | grep -q "Yes .*$READER"; }
# start_sim STATE SERIAL [ARGS...]: tokenpin-sim with STATE attached to the first reader, once pcscd sees it.
start_sim() {
    "$SIM" --state "$1" --port "$PORT" --serial "$2" "${@:3}" 2>>"$WORK/sim.log" &
    SIM_PID=$!
    for _ in $(seq 100); do card_present && return 0; sleep 0.05; done
    return 1
}
# stop_sim: the card goes (SIGTERM), and pcscd has seen it go.
stop_sim() {
    if [ -n "$SIM_PID" ]; then kill -TERM "$SIM_PID" 2>/dev/null; wait "$SIM_PID" 2>/dev/null; fi
    SIM_PID=
    for _ in $(seq 100); do card_present || return 0; sleep 0.05; done
}

# check_replays NAME TAP INS STATE SERIAL [ARGS...]: run right after the bind, with the real card in. A fake card with
# the real one's identity (tokenpin-sim STATE SERIAL ARGS) that takes any PIN and answers instruction INS with each
# card answer TAP recorded (the bind's, then each verify's) is put in: right after the bind, after one verify with
# the real card and after four. None may open the token slot, since every seal is made under a challenge that never
# crossed the line. The real card (card PIN $CARD_PIN, default 123456) then verifies again; `tp` is the suite's
# tokenpin. Prints the figure: answers tried, windows. Returns 1 when the real card does not come back.
check_replays() {
    local name=$1 tap=$2 ins=$3 state=$4 serial=$5 answers answer tried=0 refused=0 verified=0 window pin=${CARD_PIN:-123456}
    shift 5
    # What the tap holds now: the bind's answer, after whatever the card's setup put there (a self-signed
    # certificate is a GENERAL AUTHENTICATE too); each window adds the verifies' answers.
    local before
    before=$(wc -l <"$tap")
    for window in 0 1 4; do
        while [ "$verified" -lt "$window" ]; do
            tp verify --method token --pin-stdin <<<"$pin" >"$WORK/out" 2>"$WORK/err" \
                || { not_ok "$name: the real card verifies ($(head -c 300 "$WORK/err"))"; return 1; }
            verified=$((verified + 1))
        done
        mapfile -t answers <"$tap"
        for answer in "${answers[@]}"; do
            stop_sim
            start_sim "$state" "$serial" "$@" --fault sw:9000@20 --fault "answer:$answer@$ins" || continue
            tp verify --method token --pin-stdin <<<000000 >"$WORK/out" 2>"$WORK/err"
            if [ $? = 1 ] && grep -q "does not open the token slot" "$WORK/err"; then refused=$((refused + 1)); fi
            tried=$((tried + 1))
        done
        stop_sim
        # The real card again, its answers tapped as before.
        start_sim "$state" "$serial" "$@" --tap "$tap" || { not_ok "$name: the real card is back"; return 1; }
    done
    check "$name: the tap saw the bind's answer and each verify's (${tried} replays in 3 windows)" \
        test "$before" -ge 1 -a "$tried" = $((3 * before + 5))
    check "$name: no replayed answer verifies, right after the bind, after 1 verify or after 4 (${refused}/${tried} refused)" \
        test "$refused" = "$tried"
    echo "# replay: $name: $tried captured answers tried from a fake card, in 3 windows (after the bind, 1 and 4 verifies)"
    expect_code "$name: the real card still verifies after the replays" 0 tp verify --method token --pin-stdin <<<"$pin"
}

cleanup() {
    stop_daemon
    for user in "${CLEANUP_USERS[@]}"; do userdel "$user" 2>/dev/null; done
    for file in "${CLEANUP_FILES[@]}"; do rm -f "$file"; done
    if [ "${KEEP_WORK:-}" = "" ]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT

# The PAM service tokenpind checks login passwords with before a user enrols (enrol-auth = password, the
# default): the shipped /etc/pam.d/tokenpin-enrol, its pam_faillock tallies kept in this run's directory.
mkdir -p "$WORK/faillock"
mapfile -t ENROL_LINES < <(sed -e '/^#/d' -e '/^$/d' -e "s|pam_faillock.so \([a-z]*\)|pam_faillock.so \1 dir=$WORK/faillock|" \
    "$ROOT/pam/tokenpin-enrol")
pam_service ENROL_SERVICE "${ENROL_LINES[@]}"
printf 'enrol-pam-service = %s\n' "$ENROL_SERVICE" >> "$CONFIG"

finish() {
    echo "$PASSED passed, $FAILED failed"
    [ "$FAILED" = 0 ]
}

# loaded_on_first_use SONAME NAME: for a library tokenpin loads the first time it calls it (Sources/C/LazyLibrary),
# checks that no binary names SONAME as a needed library, then defines `without_library COMMAND...` (COMMAND in a
# private mount namespace where dlopen(SONAME) fails: /dev/null bound over the file) and `tp` (tokenpin on $WORK's
# local store, without the library), and checks that the library cannot be loaded there. Without root, unshare or
# the library in the loader's cache, the calling script ends there.
loaded_on_first_use() {
    local soname=$1 name=$2 binary
    for binary in "$BIN/tokenpin" "$BIN/tokenpin-bench" "$BIN/tokenpind" "$BIN/tokenpin-askpass" \
        "$BIN/age-plugin-tokenpin" "$BIN/tokenpin-pkcs11"; do
        check "$(basename "$binary") does not need $name at start" \
            bash -c "readelf -d '$binary' | grep -q NEEDED && ! readelf -d '$binary' | grep -q '${soname%%.so*}'"
    done
    lazy_library=$(ldconfig -p | awk -v soname="$soname" '$1 == soname && /x86-64/ { print $NF; exit }')
    if [ "$(id -u)" != 0 ] || [ -z "$lazy_library" ] || ! command -v unshare >/dev/null; then
        echo "skipped: the checks without $name need root, unshare and $soname in the loader's cache"
        finish; exit $?
    fi
    without_library() {
        unshare -m bash -c 'mount --bind /dev/null "$1" && shift && exec "$@"' bash "$lazy_library" "$@"
    }
    tp() { without_library "$TOKENPIN" --local --store "$WORK/store" --config "$CONFIG" "$@"; }
    check "$soname cannot be loaded in the namespace" \
        without_library python3 -c 'import ctypes, sys
try:
    ctypes.CDLL(sys.argv[1])
except OSError:
    sys.exit(0)
sys.exit(1)' "$soname"
}
