#!/usr/bin/env bash
# Backups behind tokenpin (issue 22, consumer 2), with Debian's restic and the recipe docs/what-the-pin-opens.md
# prints: --password-command 'tokenpin derive restic --format base64'. A record with the (simulated) card bound:
# init, backup and restore after the card PIN typed on the terminal, the restored files the same; a wrong card PIN
# falling back to the PIN opens the repository; with --method token a wrong card PIN, and Enter alone, fail restic
# cleanly (its exit status, the repository unchanged). borg the same way with BORG_PASSCOMMAND (when installed). Through tokenpind on its default socket (a private mount
# namespace with a tmpfs over /run); the key is never in any process's argv or environment nor in the log.
if [ "${1:-}" != --inside ]; then
    [ "$(id -u)" = 0 ] || { echo "restic.sh needs root (a mount namespace)"; exit 1; }
    exec unshare -m --propagation private -- bash "$0" --inside
fi
mount -t tmpfs -o mode=0755 tmpfs /run || { echo "cannot mount a tmpfs over /run"; exit 1; }
. "$(dirname "$0")/lib.sh"
command -v restic >/dev/null || { echo "skipped: needs restic"; exit 0; }
KEYBOARD=$ROOT/Tests/TokenpinCLITests/Support/keyboard.py
mkdir -p /run/tokenpin && SOCKET=/run/tokenpin/socket && CLI_ARGS=(--socket "$SOCKET" --json --pin-stdin)
trap 'kill "$SCANNER" 2>/dev/null; cleanup; umount /run' EXIT
start_daemon --reader sim || exit 1
PIN=482916 CARD_PIN=123456
client enrol <<<"$PIN"$'\n'"$PIN" >/dev/null 2>&1 || { echo "cannot enrol"; exit 1; }
client toggle token on --generate-key --yes < <(printf '%s\n%s\n12345678\n' "$PIN" "$CARD_PIN") >/dev/null \
    || { echo "cannot bind the simulated card"; exit 1; }
export PATH=$BIN:$PATH RESTIC_REPOSITORY=$WORK/repo RESTIC_CACHE_DIR=$WORK/cache
COMMAND='tokenpin derive restic --format base64'

# The key, for the checks only (a 0600 file, never exported or on a command line); then, every 20 ms until the end,
# any process whose argv or environment holds it.
(umask 077; "$TOKENPIN" derive restic --format base64 --method pin --pin-stdin <<<"$PIN" >"$WORK/key"
    "$TOKENPIN" derive borg --format base64 --method pin --pin-stdin <<<"$PIN" >"$WORK/borg-key")
check "tokenpin derive restic gives 44 characters of base64" grep -qE '^[A-Za-z0-9+/]{43}=$' "$WORK/key"
(while :; do grep -l -F -f "$WORK/key" -f "$WORK/borg-key" /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null
    sleep 0.02; done \
    >"$WORK/leaks") &
SCANNER=$!

# keys KEYS -- COMMAND...: COMMAND on a terminal, KEYS typed (keyboard.py); its exit status is the command's.
keys() {
    local steps=$1; shift 2
    python3 "$KEYBOARD" "$steps" -- "$@" >"$WORK/tty" 2>&1
    return "$(sed -n 's/^EXIT //p' "$WORK/tty" | tail -1)"
}
CARD="wait:Card PIN for|$CARD_PIN\r"
mkdir -p "$WORK/data/sub" && head -c 300000 /dev/urandom >"$WORK/data/blob" && echo "a file" >"$WORK/data/sub/note"
expect_code "restic init with --password-command '$COMMAND': the card PIN" 0 \
    keys "$CARD" -- restic --password-command "$COMMAND" init
check "  the card PIN was asked on the terminal, once" test "$(grep -c 'Card PIN for' "$WORK/tty")" = 1
expect_code "restic backup: the card PIN" 0 keys "$CARD" -- restic --password-command "$COMMAND" backup "$WORK/data"
expect_code "restic restore latest: the card PIN" 0 \
    keys "$CARD" -- restic --password-command "$COMMAND" restore latest --target "$WORK/restored"
check "the restored files are the backed-up ones" diff -r "$WORK/data" "$WORK/restored$WORK/data"
expect_code "the same key opens the repository as a password file (RESTIC_PASSWORD_FILE)" 0 \
    restic --password-file "$WORK/key" cat config

expect_code "a wrong card PIN falls back to the PIN: restic snapshots opens the repository" 0 \
    keys "wait:Card PIN for|000000\r|wait:tokenpin PIN for|$PIN\r" -- restic --password-command "$COMMAND" snapshots
check "  and lists the backup" grep -q -F "$WORK/data" "$WORK/tty"

state() { (cd "$WORK/repo" && find . -type f -print0 | sort -z | xargs -0 sha256sum; find . | sort) | sha256sum; }
before=$(state)
expect_code "--method token and a wrong card PIN: restic backup fails (exit 1)" 1 \
    keys "wait:Card PIN for|000000\r" -- restic --password-command "$COMMAND --method token" backup "$WORK/data"
check "  tokenpin said the card refused it, and restic that the password command failed" \
    bash -c "grep -qi 'card' '$WORK/tty' && grep -qi 'password' '$WORK/tty'"
expect_code "Enter alone at the card PIN: restic backup fails (exit 1), nothing tried" 1 \
    keys "wait:Card PIN for|\r" -- restic --password-command "$COMMAND" backup "$WORK/data"
check "  tokenpin said nothing was tried" grep -q "nothing was tried" "$WORK/tty"
check "the repository is unchanged by the failed runs (files, contents, no lock left)" test "$(state)" = "$before"
expect_code "the card still opens it (its counter restored)" 0 \
    keys "$CARD" -- restic --password-command "$COMMAND" cat config

# borg, with BORG_PASSCOMMAND as the page says: init (repokey), create, extract, and Enter alone failing cleanly.
if command -v borg >/dev/null; then
    export BORG_PASSCOMMAND='tokenpin derive borg --format base64' BORG_REPO=$WORK/borg BORG_BASE_DIR=$WORK/borg-base
    expect_code "borg init --encryption=repokey with BORG_PASSCOMMAND: the card PIN" 0 \
        keys "$CARD" -- borg init --encryption=repokey
    expect_code "borg create: the card PIN" 0 keys "$CARD" -- borg create ::first "$WORK/data"
    mkdir "$WORK/borg-out"
    expect_code "borg extract: the card PIN" 0 keys "$CARD" -- bash -c 'cd "$0" && borg extract ::first' "$WORK/borg-out"
    check "the extracted files are the archived ones" diff -r "$WORK/data" "$WORK/borg-out$WORK/data"
    borg_state() { (cd "$WORK/borg" && find . -type f -print0 | sort -z | xargs -0 sha256sum) | sha256sum; }
    before=$(borg_state)
    keys "wait:Card PIN for|\r" -- borg create ::second "$WORK/data"
    code=$?
    check "Enter alone at the card PIN: borg create fails (exit $code) and the repository is unchanged" \
        test "$code" != 0 -a "$(borg_state)" = "$before"
else
    echo "# borg is not installed: its checks are skipped"
fi

kill "$SCANNER" 2>/dev/null; wait "$SCANNER" 2>/dev/null
check "no process had the key in its argv or environment ($(sort -u "$WORK/leaks" | head -3 | tr '\n' ' '))" \
    test ! -s "$WORK/leaks"
check "no key or PIN in the daemon's log" \
    bash -c "! grep -q -F -f '$WORK/key' -f '$WORK/borg-key' '$WORK/daemon.log' && ! grep -qE '$PIN|$CARD_PIN' '$WORK/daemon.log'"
check "the daemon logged the releases by name" grep -q "key released.*restic" "$WORK/daemon.log"
finish
