#!/usr/bin/env bash
# age files behind tokenpin (issue 22, consumer 3), with Debian's age (1.1.1) and age-plugin-tokenpin on PATH:
# `age -r $(tokenpin age recipient)` encrypts with plain age, `age -d -i IDENTITYFILE` decrypts through the plugin
# after the PIN typed on the terminal (age asks it, `request-secret`); a wrong PIN fails cleanly (counted once,
# nothing decrypted), Enter alone and Ctrl-D cancel (nothing counted); a file encrypted to another recipient and
# ours opens with either identity, and one for the other recipient only is left to the other identity; with the
# simulated card bound the card PIN opens it, and with the card pulled the plugin says so and falls back to the PIN;
# a site's `app.age.method = token` then refuses without the card. Through tokenpind on its default socket, as a
# person runs it: a private pcscd with the simulated card (Simulator/pcscd-sandbox) and a tmpfs over /run.
. "$(dirname "$0")/lib.sh"
enter_sandbox age age-keygen opensc-tool
SIM=${TOKENPIN_SIM_BIN:-$BIN/tokenpin-sim}
[ -x "$BIN/age-plugin-tokenpin" ] || { echo "age-plugin-tokenpin is not built"; exit 1; }
# tokenpind's default socket, as the plugin (run by age, with no flags) finds it: a tmpfs over /run, with the
# sandbox's pcscd socket carried across.
mkdir -p "$WORK/pcscd" && mount --bind /run/pcscd "$WORK/pcscd" && mount -t tmpfs -o mode=0755 tmpfs /run \
    && mkdir -p /run/pcscd /run/tokenpin && mount --bind "$WORK/pcscd" /run/pcscd \
    || { echo "cannot mount a tmpfs over /run"; exit 1; }
SOCKET=/run/tokenpin/socket && CLI_ARGS=(--socket "$SOCKET" --json --pin-stdin)
trap 'stop_sim; umount /run/pcscd /run "$WORK/pcscd" 2>/dev/null; cleanup' EXIT
start_sim "$WORK/card.json" 0000A6E5 || { echo "the simulated card did not come up"; exit 1; }
printf 'reader = %s\n' "$READER" >>"$CONFIG"
start_daemon || exit 1
PIN=482916 CARD_PIN=123456
client enrol <<<"$PIN"$'\n'"$PIN" >/dev/null 2>&1 || { echo "cannot enrol"; exit 1; }
export PATH=$BIN:$PATH
KEYBOARD=$ROOT/Tests/TokenpinCLITests/Support/keyboard.py
# keys KEYS -- COMMAND...: COMMAND on a terminal, KEYS typed (keyboard.py); its exit status is the command's.
keys() {
    local steps=$1; shift 2
    python3 "$KEYBOARD" "$steps" -- "$@" >"$WORK/tty" 2>&1
    return "$(sed -n 's/^EXIT //p' "$WORK/tty" | tail -1)"
}
on_tty() { grep -q -F "$1" "$WORK/tty"; }
remaining() { client status | json_field remaining; }
cd "$WORK" || exit 1

RECIPIENT=$(tokenpin --pin-stdin age recipient <<<"$PIN" 2>"$WORK/err")
check "tokenpin age recipient prints an age1 recipient after the PIN" grep -qE '^age1[02-9ac-hj-np-z]{58}$' <<<"$RECIPIENT"
tokenpin --pin-stdin age identity <<<"$PIN" >identity 2>"$WORK/err"
check "tokenpin age identity prints the recipient as a comment and the identity line" \
    bash -c "grep -qxF '# tokenpin age identity of root: opens $RECIPIENT after the PIN or the card (age-plugin-tokenpin)' identity && grep -qE '^AGE-PLUGIN-TOKENPIN-1[02-9AC-HJ-NP-Z]+$' identity"
check "tokenpin age recipient --identity reads the same recipient, no PIN asked" \
    test "$(tokenpin age recipient --identity identity </dev/null)" = "$RECIPIENT"
expect_code "a wrong PIN for tokenpin age recipient prints nothing and exits 1" 1 \
    tokenpin --pin-stdin age recipient <<<000000
check "  nothing on standard output" test ! -s "$WORK/out"
check "  it was counted (4 tries left)" test "$(remaining)" = 4

head -c 100000 /dev/urandom >plain
age -r "$RECIPIENT" -o file.age plain
check "plain age encrypts to the recipient" test -s file.age
expect_code "age -d -i identity: the PIN asked through age opens the file" 0 \
    keys "wait:tokenpin PIN for root|$PIN\r" -- age -d -i identity -o opened file.age
check "  the file is the original" cmp -s plain opened
check "  age showed tokenpin's prompt with the tries left" on_tty "tokenpin PIN for root (4 tries left):"
check "  the success cleared the wrong PIN (5 tries left)" test "$(remaining)" = 5
# The plugin fed age's protocol text (this file's stanza, the PIN as age answers request-secret), and the figure:
# a session against `tokenpin derive age`, the same verification, without a person's typing in either.
{ printf -- '-> add-identity %s\n\n' "$(grep '^AGE-PLUGIN-TOKENPIN-1' identity)"
  sed -n '2,3p' file.age | sed '1s/^-> /-> recipient-stanza 0 /'
  printf -- '-> done\n\n-> ok\n%s\n-> ok\n\n' "$(printf %s "$PIN" | base64 | tr -d =)"; } >session
expect_code "the plugin fed the protocol text age sends: one request-secret, then file-key 0 and done" 0 \
    bash -c 'age-plugin-tokenpin --age-plugin=identity-v1 <session'
check "  (its answers)" test "$(grep '^-> ' "$WORK/out" | cut -d' ' -f2,3 | tr '\n' ,)" = 'request-secret,file-key 0,done,' 
timed() { local start; start=$(date +%s%N); "$@" >/dev/null 2>&1; echo $((($(date +%s%N) - start) / 1000000)); }
PLUGIN_MS=() DERIVE_MS=()
for _ in 1 2 3; do
    PLUGIN_MS+=("$(timed bash -c 'age-plugin-tokenpin --age-plugin=identity-v1 <session')")
    DERIVE_MS+=("$(timed bash -c "tokenpin derive age --format hex --pin-stdin <<<$PIN")")
done
echo "# time (ms, 3 runs, kdf 8 MiB/1 pass): plugin session ${PLUGIN_MS[*]}; tokenpin derive age ${DERIVE_MS[*]}"

rm -f opened
expect_code "a wrong PIN: age fails (exit 1)" 1 keys "wait:tokenpin PIN for root|000000\r" -- age -d -i identity -o opened file.age
check "  saying so through age" on_tty "tokenpin plugin: wrong PIN (4 tries left); nothing was decrypted"
check "  nothing was decrypted" test ! -e opened
check "  the counter was spent once (4 tries left)" test "$(remaining)" = 4
expect_code "Enter alone: cancelled (exit 1)" 1 keys "wait:tokenpin PIN for root|\r" -- age -d -i identity -o opened file.age
check "  saying nothing was tried or counted" on_tty "tokenpin plugin: cancelled: nothing was tried or counted"
expect_code "no terminal to ask on (age answers the request with fail): cancelled (exit 1)" 1 \
    setsid -w age -d -i identity -o opened file.age </dev/null
check "  saying so" grep -q "tokenpin plugin: cancelled: nothing was tried or counted" "$WORK/err"
check "  neither was counted (still 4 tries left)" test "$(remaining)" = 4
check "  nothing was decrypted" test ! -e opened

age-keygen -o other 2>/dev/null
OTHER=$(age-keygen -y other)
age -r "$OTHER" -r "$RECIPIENT" -o both.age plain
expect_code "a file for another recipient and ours opens through the plugin" 0 \
    keys "wait:tokenpin PIN for root|$PIN\r" -- age -d -i identity -o opened both.age
check "  the file is the original" cmp -s plain opened
rm -f opened
expect_code "  and with the other identity alone, no PIN asked" 0 age -d -i other -o opened both.age </dev/null
age -r "$OTHER" -o others.age plain
cat identity other >both-identities
expect_code "a file for the other recipient only, both identities in one file (tokenpin's first): opens" 0 \
    keys "wait:tokenpin PIN for root|$PIN\r" -- age -d -i both-identities -o others-opened others.age
check "  tokenpin's key was left out (its message), the other identity opened it" \
    bash -c "grep -q 'is not among the recipients of this file' '$WORK/tty' && cmp -s plain others-opened"

# The simulated card bound: application keys survive re-binding, so the recipient is the same.
client toggle token on --generate-key --yes < <(printf '%s\n%s\n12345678\n' "$PIN" "$CARD_PIN") >/dev/null \
    || not_ok "binding the simulated card"
rm -f opened
expect_code "with the card bound, the card PIN opens the file" 0 \
    keys "wait:Card PIN for|$CARD_PIN\r" -- age -d -i identity -o opened file.age
check "  the file is the original (the same recipient after binding the card)" cmp -s plain opened
stop_sim
rm -f opened
expect_code "the card pulled: the plugin says so, falls back to the PIN, and opens the file" 0 \
    keys "wait:tokenpin PIN for root|$PIN\r" -- age -d -i identity -o opened file.age
check "  age showed why the card was not used" on_tty "tokenpin plugin: token not used:"
check "  the file is the original" cmp -s plain opened
printf 'app.age.method = token\n' >>"$CONFIG"
stop_daemon && start_daemon || exit 1
rm -f opened
expect_code "app.age.method = token and no card: age fails, nothing asked" 1 \
    keys "sleep:0.3" -- age -d -i identity -o opened file.age
check "  saying the card is needed" bash -c "grep -q 'tokenpin plugin: ' '$WORK/tty' && ! grep -q 'PIN for' '$WORK/tty' && [ ! -e opened ]"
grep 'tokenpin plugin' "$WORK/tty" | head -2 | sed 's/^/# /'

expect_code "age-plugin-tokenpin refuses a state machine it does not know" 2 age-plugin-tokenpin --age-plugin=recipient-v1
check "  naming it" grep -q "unknown age plugin state machine 'recipient-v1'" "$WORK/err"
printf -- '-> add-identity X\n\nnot a stanza\n' >bad-input
expect_code "malformed protocol input: refused clearly (exit 65), no crash" 65 \
    bash -c 'age-plugin-tokenpin --age-plugin=identity-v1 <bad-input'
check "  the error goes back on the protocol" grep -q -- "-> error internal" "$WORK/out"
finish
