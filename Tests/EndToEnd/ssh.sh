#!/usr/bin/env bash
# ssh keys behind tokenpin (issue 22, consumer 1), with Debian's ssh-keygen, ssh-agent and ssh-add and
# tokenpin-askpass as SSH_ASKPASS (SSH_ASKPASS_REQUIRE=force): a key made with the application key of ssh:NAME as
# its passphrase, added to an agent after the PIN typed on the terminal, listed by `ssh-add -l`; a wrong PIN adds
# nothing; a key with another passphrase and a prompt tokenpin-askpass does not know are refused with their exit
# codes; a typed passphrase re-keyed to tokenpin's (`ssh-keygen -p`); a key added with `ssh-add -c` used only
# after a fresh verification. It all goes through tokenpind on its default socket, as a person runs it (a private
# mount namespace with a tmpfs over /run), then once in local mode; the passphrase is never in any process's argv or
# environment (/proc, read all along) nor in the daemon's log.
if [ "${1:-}" != --inside ]; then
    [ "$(id -u)" = 0 ] || { echo "ssh.sh needs root (a mount namespace)"; exit 1; }
    exec unshare -m --propagation private -- bash "$0" --inside
fi
mount -t tmpfs -o mode=0755 tmpfs /run || { echo "cannot mount a tmpfs over /run"; exit 1; }
. "$(dirname "$0")/lib.sh"
for tool in ssh-keygen ssh-agent ssh-add; do command -v $tool >/dev/null || { echo "skipped: needs $tool"; exit 0; }; done
KEYBOARD=$ROOT/Tests/TokenpinCLITests/Support/keyboard.py
ASKPASS=$BIN/tokenpin-askpass
[ -x "$ASKPASS" ] || { echo "tokenpin-askpass is not built"; exit 1; }
mkdir -p /run/tokenpin && SOCKET=/run/tokenpin/socket && CLI_ARGS=(--socket "$SOCKET" --json --pin-stdin)
trap 'kill "$SCANNER" "$SSH_AGENT_PID" 2>/dev/null; cleanup; umount /run' EXIT
start_daemon || exit 1
PIN=482916
client enrol <<<"$PIN"$'\n'"$PIN" >/dev/null 2>&1 || { echo "cannot enrol"; exit 1; }

KEYS=$WORK/ssh && mkdir -m 0700 "$KEYS"
export SSH_ASKPASS=$ASKPASS SSH_ASKPASS_REQUIRE=force
# The passphrases tokenpin will give, for the checks only (never exported, never on a command line): one per line
# of a 0600 file, which the /proc scan and the checks read.
(umask 077; for name in id_work id_rekey; do "$TOKENPIN" derive "ssh:$name" --format base64 --pin-stdin <<<"$PIN"; done \
    >"$WORK/passphrases")
check "tokenpin derive gives the two passphrases (44 characters of base64 each)" \
    test "$(grep -cE '^[A-Za-z0-9+/]{43}=$' "$WORK/passphrases")" = 2
# opens KEY LINE: KEY opens with line LINE of the passphrase file, given by an askpass that reads it.
printf '#!/bin/sh\nsed -n "${TEST_LINE}p" %q\n' "$WORK/passphrases" >"$WORK/file-askpass" && chmod 0700 "$WORK/file-askpass"
opens() { TEST_LINE=$2 SSH_ASKPASS=$WORK/file-askpass ssh-keygen -y -f "$1" >/dev/null 2>&1 </dev/null; }

# Every 20 ms until the end: any process whose argv or environment holds a passphrase.
(while :; do grep -l -F -f "$WORK/passphrases" /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null; sleep 0.02; done \
    >"$WORK/leaks") &
SCANNER=$!

# keys KEYS -- COMMAND...: COMMAND on a terminal, KEYS typed (keyboard.py); its exit status is the command's.
keys() {
    local steps=$1; shift 2
    python3 "$KEYBOARD" "$steps" -- "$@" >"$WORK/tty" 2>&1
    return "$(sed -n 's/^EXIT //p' "$WORK/tty" | tail -1)"
}
on_tty() { grep -q -F "$1" "$WORK/tty"; }

expect_code "ssh-keygen -t ed25519 with TOKENPIN_SSH_KEY=id_work: both passphrase prompts answered after the PIN" 0 \
    keys "wait:tokenpin PIN|$PIN\r|wait:tokenpin PIN|$PIN\r" -- env TOKENPIN_SSH_KEY=id_work \
    ssh-keygen -q -t ed25519 -C work -f "$KEYS/id_work"
check "the key opens with the application key of ssh:id_work" opens "$KEYS/id_work" 1
check "the key does not open with another name's" bash -c "! TEST_LINE=2 SSH_ASKPASS='$WORK/file-askpass' ssh-keygen -y -f '$KEYS/id_work' </dev/null >/dev/null 2>&1"

eval "$(ssh-agent -s -a "$WORK/agent.socket")" >/dev/null
FINGERPRINT=$(ssh-keygen -lf "$KEYS/id_work.pub" | cut -d' ' -f2)
expect_code "ssh-add: the file's name picks ssh:id_work; the PIN on the terminal adds the key" 0 \
    keys "wait:tokenpin PIN|$PIN\r" -- ssh-add "$KEYS/id_work"
check "ssh-add -l lists it ($FINGERPRINT)" bash -c "ssh-add -l | grep -q -F '$FINGERPRINT'"
ssh-add -D >/dev/null 2>&1
expect_code "ssh-add with a wrong PIN fails" 1 keys "wait:tokenpin PIN|000000\r" -- ssh-add "$KEYS/id_work"
check "a wrong PIN: tokenpin said so on the terminal" on_tty "Wrong PIN"
expect_code "a wrong PIN added nothing (ssh-add -l: no identities)" 1 ssh-add -l
check "the wrong PIN was counted once (4 tries left)" test "$(client status | json_field remaining)" = 4

ssh-keygen -q -t ed25519 -N 'typed-Passphrase-1' -C other -f "$KEYS/id_other"
expect_code "a key with another passphrase: ssh-add fails after one derivation, never loops" 1 \
    keys "wait:tokenpin PIN|$PIN\r" -- ssh-add "$KEYS/id_other"
check "  and tokenpin-askpass says why on the terminal" on_tty "does not open $KEYS/id_other"
check "  and asked for the PIN once" test "$(grep -c 'tokenpin PIN for' "$WORK/tty")" = 1
expect_code "ssh-keygen -p: a typed passphrase re-keyed to ssh:id_rekey's (old typed, new after the PIN twice)" 0 \
    keys "wait:Enter old passphrase|typed-Passphrase-1\r|wait:tokenpin PIN|$PIN\r|wait:tokenpin PIN|$PIN\r" -- \
    env TOKENPIN_SSH_KEY=id_rekey ssh-keygen -p -f "$KEYS/id_other"
check "the re-keyed key opens with ssh:id_rekey's key" opens "$KEYS/id_other" 2
check "the typed passphrase was not echoed" bash -c "! grep -q typed-Passphrase '$WORK/tty'"

ASKED=$WORK/asked
expect_code "ssh's own prompt (Enter passphrase for key 'FILE':) gets ssh:id_work after the PIN" 0 \
    keys "wait:tokenpin PIN|$PIN\r" -- bash -c '"$0" "Enter passphrase for key '"'"'$1'"'"': " >"$2"' "$ASKPASS" "$KEYS/id_work" "$ASKED"
check "  and its standard output is the passphrase and a newline, nothing else" cmp -s <(sed -n 1p "$WORK/passphrases") "$ASKED"
for prompt in "Enter PIN for ED25519-SK key /k: " "Password for root@host: " "Enter passphrase for " ""; do
    "$ASKPASS" "$prompt" >"$ASKED" 2>"$WORK/err" </dev/null
    code=$?
    check "a prompt it does not know (\"$prompt\"): exit 2, nothing on stdout, the reason said" \
        test "$code" = 2 -a ! -s "$ASKED" -a -s "$WORK/err"
done
expect_code "a key file whose name is not an application name: exit 2 before any prompt" 2 \
    "$ASKPASS" "Enter passphrase for $KEYS/Work Key: "
check "  naming TOKENPIN_SSH_KEY" grep -q TOKENPIN_SSH_KEY "$WORK/err"
expect_code "TOKENPIN_SSH_KEY that is not a name: exit 2" 2 env TOKENPIN_SSH_KEY='../x' "$ASKPASS" "Enter passphrase: "
expect_code "run by hand on a terminal: exit 2, nothing asked or shown" 2 keys "sleep:0.2" -- "$ASKPASS" "Enter passphrase: "
check "  saying why" on_tty "standard output is a terminal"

# ssh-add -c: the agent asks its askpass (hint "confirm") at each use; tokenpin-askpass answers with a verification.
# The agent runs on a terminal of its own, where the PIN is typed; ssh-add -T makes it sign.
AGENT2=$WORK/agent2.socket
python3 "$KEYBOARD" "wait:Confirm with your|wait:tokenpin PIN for|$PIN\r|wait:Confirm with your|wait:tokenpin PIN for|000000\r|sleep:1|kill:15" \
    -- ssh-agent -D -a "$AGENT2" >"$WORK/agent-tty" 2>&1 &
KEYBOARD_AGENT=$!
for _ in $(seq 100); do [ -S "$AGENT2" ] && break; sleep 0.05; done
export SSH_AUTH_SOCK=$AGENT2
expect_code "ssh-add -c adds the key (PIN)" 0 keys "wait:tokenpin PIN|$PIN\r" -- ssh-add -c "$KEYS/id_work"
expect_code "a use of the -c key after the PIN at the agent's confirmation: signed" 0 ssh-add -T "$KEYS/id_work.pub"
expect_code "a use of the -c key with a wrong PIN at the confirmation: refused" 1 ssh-add -T "$KEYS/id_work.pub"
wait "$KEYBOARD_AGENT"
check "the agent showed what it asks about" grep -q "Allow use of key" "$WORK/agent-tty"

# Local mode, as the CLI decides it: no tokenpind socket (and no unit: TOKENPIN_DAEMON_MARKERS, debug builds), a
# record in the user's own store.
stop_daemon; rm -f "$SOCKET"
export XDG_STATE_HOME=$WORK/local-state TOKENPIN_DAEMON_MARKERS=$WORK/no-unit
"$TOKENPIN" --pin-stdin enrol <<<"$PIN"$'\n'"$PIN" >/dev/null 2>&1
(umask 077; "$TOKENPIN" derive ssh:id_work --format base64 --pin-stdin <<<"$PIN" >"$WORK/local-passphrase")
cat "$WORK/local-passphrase" >>"$WORK/passphrases"   # the /proc scan looks for it too
expect_code "local mode: ssh's prompt answered from the local record after the PIN" 0 \
    keys "wait:tokenpin PIN|$PIN\r" -- bash -c '"$0" "Enter passphrase for $1: " >"$2"' "$ASKPASS" "$KEYS/id_work" "$ASKED"
check "  with the local record's key (another vault key than the daemon's)" \
    bash -c "cmp -s '$WORK/local-passphrase' '$ASKED' && ! cmp -s <(sed -n 1p '$WORK/passphrases') '$ASKED'"

kill "$SCANNER" 2>/dev/null; wait "$SCANNER" 2>/dev/null
check "no process had a passphrase in its argv or environment ($(sort -u "$WORK/leaks" | head -3 | tr '\n' ' '))" \
    test ! -s "$WORK/leaks"
check "no passphrase or PIN in the daemon's log" \
    bash -c "! grep -q -F -f '$WORK/passphrases' '$WORK/daemon.log' && ! grep -q '$PIN' '$WORK/daemon.log'"
check "the daemon logged the releases by name" grep -q "key released.*ssh:id_work" "$WORK/daemon.log"
finish
