#!/usr/bin/env bash
# The login keyring (login-keyring = on) with Debian's gnome-keyring, pam_gnome_keyring and secret-tool, each user
# session on a D-Bus bus of its own (dbus-run-session), under PAM stacks of this test's own run by pamtester: the
# password checked at enrolment is sealed, a PIN login hands it to pam_gnome_keyring, which unlocks the login
# keyring so that secret-tool finds what was stored; a changed password (chauthtok) is sealed again; a remote login,
# another user's su and login-keyring = off release nothing; the password is in no argv, environment or log.
# /etc is an overlay of this namespace's own (the test users, their passwords and the PAM services exist only here).
if [ "${1:-}" != --inside ]; then
    [ "$(id -u)" = 0 ] || { echo "keyring.sh needs root (a mount namespace, users, PAM files)"; exit 1; }
    exec unshare -m --propagation private -- bash "$0" --inside
fi
OVERLAY=$(mktemp -d /tmp/tokenpin-keyring.XXXXXX)
mount -t tmpfs tmpfs "$OVERLAY" && mkdir "$OVERLAY/upper" "$OVERLAY/work" \
    && mount -t overlay overlay -o "lowerdir=/etc,upperdir=$OVERLAY/upper,workdir=$OVERLAY/work" /etc \
    || { echo "cannot put an overlay over /etc"; exit 1; }
. "$(dirname "$0")/lib.sh"
for needed in pamtester gnome-keyring-daemon secret-tool dbus-run-session setpriv; do
    command -v "$needed" >/dev/null || { echo "skipped: needs $needed"; finish; exit $?; }
done
GKR_MODULE=$(ls /lib/*/security/pam_gnome_keyring.so /usr/lib/*/security/pam_gnome_keyring.so 2>/dev/null | head -1)
[ -n "$GKR_MODULE" ] || { echo "skipped: needs libpam-gnome-keyring"; finish; exit $?; }
if [ ! -f "$PAM_MODULE" ]; then make -C "$ROOT" -s pam >/dev/null || { echo "cannot build the PAM module"; exit 1; }; fi
SESSION_PIDS=()
trap 'for pid in "${SESSION_PIDS[@]}"; do kill "$pid" 2>/dev/null; done; cleanup; umount /etc; umount "$OVERLAY"; rmdir "$OVERLAY"' EXIT

printf 'login-keyring = on\npam-remote = pin\npam-other-user = pin\n' >> "$CONFIG"
start_daemon || exit 1

# A user with a home (gnome-keyring keeps ~/.local/share/keyrings there) and a runtime directory, and another user
# who will try `su` to them.
new_user ALICE && new_user MALLORY || { echo "cannot create users"; exit 1; }
HOME_DIR=$WORK/home/$ALICE RUNTIME=$WORK/run/$ALICE
mkdir -p "$HOME_DIR" "$RUNTIME" && chown "$ALICE:" "$HOME_DIR" "$RUNTIME" && chmod 0700 "$HOME_DIR" "$RUNTIME"
usermod -d "$HOME_DIR" "$ALICE"
chmod 0711 "$WORK" "$WORK/home" "$WORK/run"
PASSWORD=$(password_of "$ALICE") PIN=482916 SECRET="keyring-secret-$RANDOM"
UIDN=$(id -u "$ALICE") GIDN=$(id -g "$ALICE")
as_alice() { setpriv --reuid="$UIDN" --regid="$GIDN" --init-groups -- env -i HOME="$HOME_DIR" \
    XDG_RUNTIME_DIR="$RUNTIME" PATH=/usr/bin:/bin ${BUS:+DBUS_SESSION_BUS_ADDRESS=$BUS} "$@"; }

# session_start: a new D-Bus session bus for alice (dbus-run-session around a holder that waits), its address in
# BUS; the PAM stacks' session phase gets it and XDG_RUNTIME_DIR through pam_env, as a login's would.
session_start() {
    rm -f "$RUNTIME/bus-address"
    BUS= as_alice dbus-run-session -- sh -c 'echo "$DBUS_SESSION_BUS_ADDRESS" > "$XDG_RUNTIME_DIR/bus-address.new" &&
        mv "$XDG_RUNTIME_DIR/bus-address.new" "$XDG_RUNTIME_DIR/bus-address"; exec sleep 60' \
        >>"$WORK/session.log" 2>&1 &
    SESSION_PIDS+=($!)
    for _ in $(seq 100); do [ -s "$RUNTIME/bus-address" ] && break; sleep 0.02; done
    BUS=$(cat "$RUNTIME/bus-address")
    printf 'XDG_RUNTIME_DIR=%s\nDBUS_SESSION_BUS_ADDRESS=%s\n' "$RUNTIME" "$BUS" > "$WORK/session.env"
}
# session_end: the keyring daemon and the bus go (the daemon leaves with its bus).
session_end() {
    local pid
    for pid in $(pgrep -u "$UIDN" -x gnome-keyring-d); do kill "$pid" 2>/dev/null; done
    for pid in "${SESSION_PIDS[@]}"; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
    SESSION_PIDS=()
    for pid in $(pgrep -u "$UIDN"); do kill "$pid" 2>/dev/null; done
    rm -rf "${RUNTIME:?}"/keyring
    BUS=
}
sealed_size() { stat -c %s "$STATE/$ALICE.login-keyring" 2>/dev/null || echo 0; }
lookup() { as_alice timeout 5 secret-tool lookup service tokenpin-e2e account "$ALICE" 2>>"$WORK/session.log"; }
# exposed WORD...: whether any process's argv or environment holds one of the words (read from /proc).
exposed() {
    python3 - "$@" <<'PY'
import glob, sys
words = [w.encode() for w in sys.argv[1:]]
for path in glob.glob("/proc/[0-9]*/cmdline") + glob.glob("/proc/[0-9]*/environ"):
    try:
        data = open(path, "rb").read()
    except OSError:
        continue
    if any(w in data for w in words):
        print(path); sys.exit(0)
sys.exit(1)
PY
}

SESSION_LINES=("session required pam_env.so readenv=1 envfile=$WORK/session.env user_readenv=0"
    "session optional $GKR_MODULE auto_start")
# The password login of every Debian desktop: pam_unix, then pam_gnome_keyring (auth keeps the password, the
# session starts the daemon and unlocks, or creates, the login keyring with it).
pam_service PASSWORD_LOGIN "auth required pam_unix.so" "auth optional $GKR_MODULE" \
    "account required pam_permit.so" "${SESSION_LINES[@]}"
# The recipe of docs/what-the-pin-opens.md: tokenpin first, the password when Enter is pressed, then the keyring.
pam_service PIN_LOGIN \
    "auth [success=2 default=ignore] $PAM_MODULE socket=$SOCKET timeout=10 login_keyring" \
    "auth [success=1 default=ignore] pam_unix.so try_first_pass" \
    "auth requisite pam_deny.so" "auth required pam_permit.so" "auth optional $GKR_MODULE" \
    "account required pam_permit.so" "${SESSION_LINES[@]}"
# What PAM_AUTHTOK holds after the PIN, without a keyring: pam_unix use_first_pass takes it and never asks.
pam_service PIN_THEN_UNIX "auth required $PAM_MODULE socket=$SOCKET timeout=10 login_keyring" \
    "auth required pam_unix.so use_first_pass" "account required pam_permit.so"
# The password stack: pam_unix sets the new password, then pam_tokenpin seals it.
pam_service PASSWD "password required pam_unix.so" \
    "password optional $PAM_MODULE socket=$SOCKET timeout=10 login_keyring"

# 1. Enrolment through tokenpind, which checks alice's login password first and keeps it sealed.
runuser -u "$ALICE" -- "$TOKENPIN" "${CLI_ARGS[@]}" enrol < <(printf '%s\n%s\n%s\n' "$PASSWORD" $PIN $PIN) \
    >"$WORK/out" 2>&1
check "alice enrols after her login password" grep -q recoveryKey "$WORK/out"
check "the password checked at enrolment is sealed beside the record ($(sealed_size) bytes)" \
    test "$(sealed_size)" -gt 39
check "the sealed file is root's and 0600" test "$(stat -c %U:%a "$STATE/$ALICE.login-keyring")" = root:600

# 2. A password login makes the login keyring; a secret is stored in it.
session_start
pamtester "$PASSWORD_LOGIN" "$ALICE" authenticate open_session <<<"$PASSWORD" >"$WORK/out" 2>&1
check "a password login opens the session ($(tr '\n' ' ' <"$WORK/out" | head -c 200))" grep -q "successfully opened" "$WORK/out"
printf '%s' "$SECRET" | as_alice secret-tool store --label "tokenpin e2e" service tokenpin-e2e account "$ALICE" \
    2>>"$WORK/session.log"
check "secret-tool stored a secret in the unlocked login keyring" test "$(lookup)" = "$SECRET"
session_end

# 3. Without tokenpin the login keyring stays locked: a session without a password finds nothing.
session_start
pamtester "$PIN_LOGIN" "$ALICE" open_session >"$WORK/out" 2>&1
check "a session opened without any login leaves the keyring locked" test -z "$(lookup)"
session_end

# 4. The PIN alone: pam_tokenpin sets PAM_AUTHTOK, pam_gnome_keyring unlocks the login keyring with it.
session_start
pamtester "$PIN_LOGIN" "$ALICE" authenticate open_session <<<"$PIN" >"$WORK/out" 2>&1
check "a PIN login opens the session" grep -q "successfully opened" "$WORK/out"
check "after the PIN, secret-tool finds the secret: the login keyring is unlocked" test "$(lookup)" = "$SECRET"
check "with the keyring daemon running, no process has the password in its argv or environment" \
    sh -c "! exposed '$PASSWORD' >&2" 2>>"$WORK/out"
session_end
check "tokenpind says it released the login password to PAM" grep -q "login password released to PAM" "$WORK/daemon.log"

# 5. A remote login (PAM_RHOST) and another user's su pass the PIN and get no password.
session_start
pamtester -I rhost=198.51.100.7 "$PIN_LOGIN" "$ALICE" authenticate open_session <<<"$PIN" >"$WORK/out" 2>&1
check "a remote PIN login is accepted (pam-remote = pin)" grep -q "successfully opened" "$WORK/out"
check "a remote PIN login leaves the keyring locked" test -z "$(lookup)"
session_end
expect_code "a remote PIN login gives pam_unix no password" 1 \
    pamtester -I rhost=198.51.100.7 "$PIN_THEN_UNIX" "$ALICE" authenticate <<<"$PIN"
expect_code "su by another user (its real uid) gives pam_unix no password" 1 \
    setpriv --ruid="$(id -u "$MALLORY")" -- pamtester "$PIN_THEN_UNIX" "$ALICE" authenticate <<<"$PIN"
expect_code "alice's own PIN login gives pam_unix her password" 0 pamtester "$PIN_THEN_UNIX" "$ALICE" authenticate <<<"$PIN"
# PAM_AUTHTOK set before tokenpin (a wrong password typed to an earlier pam_unix) is left as it is.
pam_service TYPED_FIRST "auth optional pam_unix.so" \
    "auth required $PAM_MODULE socket=$SOCKET timeout=10 login_keyring" \
    "auth required pam_unix.so use_first_pass" "account required pam_permit.so"
released() { grep -c "login password released to PAM" "$WORK/daemon.log"; }
count=$(released)
expect_code "a PAM_AUTHTOK set before tokenpin is not replaced" 1 \
    pamtester "$TYPED_FIRST" "$ALICE" authenticate < <(printf 'not-her-password\n%s\n' $PIN)
check "... though tokenpind released the password to that stack" test "$(released)" = $((count + 1))
check "the journal says why the remote login got nothing" grep -q "login password not released.*a remote login" "$WORK/daemon.log"
check "the journal says why su got nothing" grep -q "login password not released.*another user's" "$WORK/daemon.log"

# 6. The password changes (chauthtok): pam_unix sets it, pam_tokenpin seals the new one; the next PIN login hands
# on the new password (pam_unix use_first_pass accepts it), not the old one.
NEW_PASSWORD="Nw-$RANDOM-pw-9z"
before=$(sha256sum "$STATE/$ALICE.login-keyring")
pamtester "$PASSWD" "$ALICE" chauthtok < <(printf '%s\n%s\n' "$NEW_PASSWORD" "$NEW_PASSWORD") >"$WORK/out" 2>&1
check "chauthtok changes the password ($(tr '\n' ' ' <"$WORK/out" | head -c 200))" grep -q "successfully" "$WORK/out"
check "chauthtok sealed the new password" test "$(sha256sum "$STATE/$ALICE.login-keyring")" != "$before"
expect_code "after the change, the PIN hands pam_unix the new password" 0 \
    pamtester "$PIN_THEN_UNIX" "$ALICE" authenticate <<<"$PIN"

# What the release adds to a PAM verification (a figure, not a test): the same PIN, 20 times each, with and without
# `login_keyring` on the module line.
pam_service PIN_ONLY "auth required $PAM_MODULE socket=$SOCKET timeout=10" "account required pam_permit.so"
pam_service PIN_KEYRING "auth required $PAM_MODULE socket=$SOCKET timeout=10 login_keyring" \
    "account required pam_permit.so"
for stack in PIN_ONLY PIN_KEYRING; do
    start=$(date +%s%N)
    for _ in $(seq 20); do pamtester "${!stack}" "$ALICE" authenticate <<<"$PIN" >/dev/null 2>&1; done
    echo "# figure: $stack: $(( ($(date +%s%N) - start) / 20000 )) us per PAM verification (kdf-memory-mib = 8)"
done

# 7. login-keyring = off: nothing is released, and the password stack seals nothing.
stop_daemon
sed -i 's/^login-keyring = on$/login-keyring = off/' "$CONFIG"
start_daemon || exit 1
expect_code "login-keyring = off: the PIN gives pam_unix no password" 1 \
    pamtester "$PIN_THEN_UNIX" "$ALICE" authenticate <<<"$PIN"
before=$(sha256sum "$STATE/$ALICE.login-keyring")
pamtester "$PASSWD" "$ALICE" chauthtok < <(printf '%s\n%s\n' "$PASSWORD" "$PASSWORD") >"$WORK/out" 2>&1
check "login-keyring = off: passwd still works" grep -q "successfully" "$WORK/out"
check "login-keyring = off: nothing new is sealed" test "$(sha256sum "$STATE/$ALICE.login-keyring")" = "$before"
check "the journal says login-keyring = off" grep -q "login-keyring = off" "$WORK/daemon.log"

# 8. No password anywhere it must not be.
leaked=0
for secret in "$PASSWORD" "$NEW_PASSWORD" "$PIN"; do
    grep -rqaF -- "$secret" "$WORK/daemon.log" "$STATE" && leaked=1
done
check "no password or PIN in tokenpind's log or its state directory" test "$leaked" = 0
check "the sealed file holds no password in the clear" sh -c "! grep -qaF -- '$NEW_PASSWORD' '$STATE/$ALICE.login-keyring'"
finish
