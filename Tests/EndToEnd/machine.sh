#!/usr/bin/env bash
# A machine of its own, as an admin would have it: a private mount namespace with overlays over /etc and /var and a
# tmpfs over /run (nothing is made on the host's own disk), and tokenpind run by hand with no options, as
# docs and tokenpind(8) say to run it without systemd. Then, as issue 25 found them:
#   - the flags a script passes (--store, --reader sim) mean local mode beside a running tokenpind, never root's
#     record or the daemon's card; status says "through tokenpind";
#   - a broken /etc/tokenpin/tokenpin.conf: the daemon keeps serving its old settings (SIGHUP), read-only commands
#     warn and go on, the others say what is broken;
#   - /etc/tokenpin/revoked.d read on SIGHUP;
#   - tokenpind's unit installed but not running: exit 69 instead of local mode, unless --local.
if [ "${1:-}" != --inside ]; then
    [ "$(id -u)" = 0 ] || { echo "machine.sh needs root (a mount namespace)"; exit 1; }
    exec unshare -m --propagation private -- bash "$0" --inside
fi
# Overlays whose upper layers live on a tmpfs of this namespace: /etc and /var change here only, and /run is new.
LAYERS=$(mktemp -d /tmp/tokenpin-machine.XXXXXX)
mount -t tmpfs tmpfs "$LAYERS" || { echo "cannot mount a tmpfs for the overlays"; exit 1; }
for dir in etc var; do
    mkdir -p "$LAYERS/$dir/upper" "$LAYERS/$dir/work" && mount -t overlay overlay \
        -o "lowerdir=/$dir,upperdir=$LAYERS/$dir/upper,workdir=$LAYERS/$dir/work" "/$dir" \
        || { echo "cannot put an overlay over /$dir"; exit 1; }
done
mount -t tmpfs -o mode=0755 tmpfs /run || { echo "cannot mount a tmpfs over /run"; exit 1; }
rm -rf /etc/tokenpin /var/lib/tokenpin && mkdir -p /etc/tokenpin /etc/systemd/system
rm -f /etc/systemd/system/tokenpind.socket /etc/systemd/system/tokenpind.service
. "$(dirname "$0")/lib.sh"
trap 'cleanup; umount /run /etc /var; umount "$LAYERS"; rmdir "$LAYERS"' EXIT
printf 'kdf-memory-mib = 8\nkdf-passes = 1\nenrol-auth = none\n' > /etc/tokenpin/tokenpin.conf
export HOME=$WORK/home XDG_STATE_HOME=$WORK/home/state XDG_CONFIG_HOME=$WORK/home/config
mkdir -p "$HOME"
tp() { "$TOKENPIN" "$@"; }

# tokenpind by hand, in the foreground, with no options: /run/tokenpin/socket, /var/lib/tokenpin, /etc/tokenpin.
TOKENPIN_SIM_PROFILE=openpgp "$TOKENPIND" --reader sim >"$WORK/daemon.log" 2>&1 &
DAEMON_PID=$!
for _ in $(seq 100); do [ -S /run/tokenpin/socket ] && break; sleep 0.05; done
check "tokenpind without options listens on /run/tokenpin/socket" [ -S /run/tokenpin/socket ]
check "... mode 0666 (the peer check decides)" [ "$(stat -c %a /run/tokenpin/socket)" = 666 ]
check "its log lines carry their time off the journal" grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z? info tokenpind: started' "$WORK/daemon.log"
check "status says it goes through tokenpind" bash -c "'$TOKENPIN' status | grep -q 'Service:    through tokenpind (socket /run/tokenpin/socket)'"

# The incident: a test script's enrol with --store and --reader sim, run as root beside the daemon.
S=$WORK/script-store
expect_code "a script's --store --reader sim enrol goes local" 0 tp --store "$S" --reader sim --pin-stdin enrol < <(printf '739164\n739164\n')
check "... the record is in the script's store" [ -f "$S/root.json" ]
check "... and root has no record in tokenpind" [ ! -e /var/lib/tokenpin/root.json ]
DAEMON_CARD=$(cat /var/lib/tokenpin/sim-card.json 2>/dev/null | sha256sum)
expect_code "a script's --reader sim toggle token on --generate-key binds the local simulated card" 0 \
    tp --store "$S" --reader sim --pin-stdin toggle token on --generate-key --yes < <(printf '739164\n123456\n12345678\n')
check "... whose state is in the script's store" [ -f "$S/sim-card.json" ]
check "... and the daemon's card was not touched" [ "$(cat /var/lib/tokenpin/sim-card.json 2>/dev/null | sha256sum)" = "$DAEMON_CARD" ]
expect_code "--store with --socket is refused naming --local" 2 tp --store "$S" --socket /run/tokenpin/socket status
check "... naming --local" grep -q -- "--local" "$WORK/err"

# A broken system configuration: the daemon keeps its old settings and serves; read-only commands warn.
expect_code "root enrols alice through tokenpind" 0 tp --user nobody enrol --pin-stdin < <(printf '482916\n482916\n')
printf 'kdf-memory-mib = 8\nkdf-passes = 1\nretires-max = 3\n' > /etc/tokenpin/tokenpin.conf
kill -HUP "$DAEMON_PID"
for _ in $(seq 50); do grep -q "configuration not reloaded" "$WORK/daemon.log" && break; sleep 0.1; done
check "SIGHUP with a broken file: the daemon keeps its settings and says so" grep -q "configuration not reloaded" "$WORK/daemon.log"
expect_code "status warns and goes on (0)" 0 tp --user nobody status
check "... the warning names the file and line" grep -q "warning: /etc/tokenpin/tokenpin.conf:3: unknown key \`retires-max\`" "$WORK/err"
check "... and the daemon still serves it" grep -q "PIN:        enrolled" "$WORK/out"
expect_code "a command that changes things still says what is broken (78)" 78 tp --user nobody verify --pin-stdin <<<482916
check "the daemon still verifies (a raw client)" bash -c "python3 - <<'EOF'
import socket, json
s = socket.socket(socket.AF_UNIX); s.connect('/run/tokenpin/socket'); f = s.makefile('rwb')
f.write(b'{\"v\":2,\"type\":\"request\",\"op\":\"verify\",\"user\":\"nobody\",\"method\":\"pin\"}\n'); f.flush()
json.loads(f.readline()); f.write(b'{\"v\":2,\"type\":\"secret\",\"prompt\":\"pin\",\"value\":\"482916\"}\n'); f.flush()
raise SystemExit(0 if json.loads(f.readline()).get('outcome') == 'verified' else 1)
EOF"
printf 'kdf-memory-mib = 8\nkdf-passes = 1\nenrol-auth = none\n' > /etc/tokenpin/tokenpin.conf

# revoked.d, the default directory, read again on SIGHUP.
expect_code "nobody binds the daemon's simulated card" 0 tp --user nobody toggle token on --generate-key --yes --pin-stdin \
    < <(printf '482916\n123456\n12345678\n')
SERIAL=$(tp --user nobody --json types | python3 -c 'import json,sys; print([t["serial"] for t in json.load(sys.stdin)["types"] if t["type"] == "token"][0])')
mkdir -p /etc/tokenpin/revoked.d && printf '# a lost badge\n%s\n' "$SERIAL" > /etc/tokenpin/revoked.d/lost
kill -HUP "$DAEMON_PID"
for _ in $(seq 50); do grep -q "revoked cards read.*revoked.count=1" "$WORK/daemon.log" && break; sleep 0.1; done
check "a new revoked.d file is read at SIGHUP" grep -q "revoked.count=1" "$WORK/daemon.log"
check "status says the card is revoked" bash -c "'$TOKENPIN' --user nobody --json status | grep -q '\"revoked\":\"/etc/tokenpin/revoked.d/lost:2\"'"
expect_code "the revoked card gets no card PIN (6)" 6 tp --user nobody verify --method token --pin-stdin <<<123456

# Stopping it: SIGTERM, and the socket goes.
kill -TERM "$DAEMON_PID"; wait "$DAEMON_PID"
check "SIGTERM stops it (exit 0)" [ $? = 0 ]
DAEMON_PID=
check "... and removes its socket" [ ! -e /run/tokenpin/socket ]

# The unit is installed, the daemon is not running: exit 69, not local mode.
printf '[Socket]\nListenStream=/run/tokenpin/socket\n' > /etc/systemd/system/tokenpind.socket
expect_code "unit installed, no daemon: status exits 69" 69 tp status
check "... saying tokenpind is not running and naming --local" bash -c "grep -q 'tokenpind is not running' '$WORK/err' && grep -q -- '--local' '$WORK/err'"
expect_code "... verify too, instead of 'not enrolled'" 69 tp --pin-stdin verify <<<482916
expect_code "--local still works" 0 tp --local status
expect_code "doctor says so (69)" 69 tp doctor
check "... naming the unit" grep -q "tokenpind is expected here (/etc/systemd/system/tokenpind.socket)" "$WORK/out"
finish
