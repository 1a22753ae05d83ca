#!/usr/bin/env bash
# pinpad-clients.sh: tokenpin's virtual pinpad reader (Simulator/pinpad) checked by clients nobody here wrote,
# through pcscd.
#
# Runs inside Simulator/pcscd-sandbox --pinpad (it re-executes itself there when TOKENPIN_SANDBOX is not set),
# puts tokenpin-sim behind the pinpad reader "tokenpin pinpad 0 00 00" and scripts its keypad
# (TOKENPIN_PINPAD_KEYS). It checks:
#   the driver's own unit tests (.build/pinpad/pinpad-tests: layouts, refusals, a random walk);
#   OpenSC lists the reader with a PIN pad (opensc-tool -l) and its feature and TLV answers are part 10's;
#   a PIV card behind it (piv-card profile): pkcs11-tool -L shows "PIN pad present"; pkcs11-tool --login, with no
#   PIN given, passes with the scripted right PIN (an 8-byte FF-padded ASCII block reaches the card) and fails with
#   a wrong one, and the card's PIV tries count goes down; CANCEL, TIMEOUT and a too-short PIN get the reader's
#   64 01 / 64 00 / 64 03 and count nothing; a card pulled during the entry fails the login and counts nothing;
#   an OpenPGP card behind it: gpg with enable-pinpad-varlen passes SCD CHECKPIN with the right PIN (a variable-
#   length PIN, Lc set by the reader) and fails with a wrong one (PW1's counter goes down); CANCEL and an entry
#   slower than the reader's timeout count nothing; gpg's SCD PASSWD changes PW1 on the pinpad (current PIN, new
#   PIN twice), new PINs that differ are refused 64 02 and change nothing; OpenSC's pkcs11-tool --change-pin
#   changes it back on the pinpad;
#   a hostile client (pinpad-control): truncated, inconsistent, oversized and odd structures, answer buffers too
#   small, an unknown control code: refused (SCARD_E_UNSUPPORTED_FEATURE, 6B 80, SCARD_E_INSUFFICIENT_BUFFER)
#   without taking a keypad entry or sending an APDU, and pcscd still serves the reader afterwards.
# It prints the SCardControl and APDU counts the driver saw per pinpad verify. The last line is "N passed, N
# failed"; the exit status is non-zero when anything failed.
#
# Usage: sudo Simulator/Tests/EndToEnd/pinpad-clients.sh   (make pinpad first; needs pcscd, opensc, gnupg, scdaemon)

set -uo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_dir=$(cd "$script_dir/../../.." && pwd)
if [[ "${TOKENPIN_SANDBOX:-}" != 1 ]]; then
    # A 2-second reader timeout for structures that leave it to the reader (gnupg's bTimerOut 00).
    TOKENPIN_PINPAD_OPTIONS=timeout=2 exec "$script_dir/../../pcscd-sandbox" --pinpad -- "$0" "$@"
fi
if [[ -z "${TOKENPIN_PINPAD_READER:-}" ]]; then
    echo "error: run this inside pcscd-sandbox --pinpad (or without a sandbox: it starts its own)" >&2
    exit 2
fi

suite=pinpad-clients
. "$script_dir/client-lib.sh"
. "$script_dir/gpg-card.sh"
# The card goes behind the pinpad.
port=$TOKENPIN_PINPAD_PORT
reader=$TOKENPIN_PINPAD_READER
keys=$TOKENPIN_PINPAD_KEYS
log=$TOKENPIN_PINPAD_LOG
module=${TOKENPIN_PKCS11_MODULE:-$(ls /usr/lib/*/opensc-pkcs11.so /usr/lib/opensc-pkcs11.so 2>/dev/null | head -1)}
control=$repo_dir/.build/pinpad/pinpad-control
suite_cleanup() { gpgconf --kill all 2>/dev/null; }

# OpenSC's PKCS#11 module gives each reader 4 slots and stops at 16: behind 4 or more vpcd readers the pinpad would
# get none. One slot per reader, up to 64.
cat >"$work/opensc.conf" <<'CONF'
app default {
    framework pkcs15 { }
}
app opensc-pkcs11 {
    pkcs11 { max_virtual_slots = 64; slots_per_card = 1; }
}
CONF
export OPENSC_CONF=$work/opensc.conf
p11() { pkcs11-tool --module "$module" --slot-description "$reader" "$@" 2>&1; }

# keypad ENTRY...: the script for the next PIN requests, one entry a line.
keypad() { printf '%s\n' "$@" >"$keys"; }
# entries_left: the entries still in the script.
entries_left() { grep -cv '^\s*\(#.*\)\?$' "$keys"; }
# mark, since_mark: the driver's log since the last mark, on one line.
mark() { : >"$log"; }
since_mark() { tr '\n' ' ' <"$log"; }
# piv_tries: the PIV PIN's VERIFY status query (63 Cx) through the pinpad reader, as a plain APDU.
piv_tries() {
    opensc-tool --reader "$reader" -s "00 A4 04 00 09 A0 00 00 03 08 00 00 10 00" -s "00 20 00 80" 2>&1 |
        sed -n 's/^Received (SW1=0x\(..\), SW2=0x\(..\)).*/\1 \2/p' | tail -1 | tr a-f A-F
}
# figure NAME: the SCardControl calls (by name) and APDUs the driver saw since the mark.
figure() {
    local controls names apdus pinpad_apdus
    controls=$(grep -c 'control #[0-9]' "$log")
    names=$(grep -oE 'control [0-9A-Z_]+( ->|:)' "$log" | grep -v '_PIN_DIRECT ->' | sed 's/^control //; s/ ->$//; s/:$//' |
        sort | uniq -c | awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1}')
    apdus=$(grep -c ' apdu ' "$log")
    pinpad_apdus=$(grep -c 'pinpad apdu ' "$log")
    echo "# figure: $1: $controls SCardControl calls ($names), $apdus APDUs ($pinpad_apdus built by the pinpad)"
}

# --- the driver's unit tests --------------------------------------------------------------------------------
if [[ -x "$repo_dir/.build/pinpad/pinpad-tests" ]]; then
    out=$("$repo_dir/.build/pinpad/pinpad-tests" 2>&1)
    status=$?
    echo "$out" | tail -1 | sed 's/^/# unit tests: /'
    if [[ $status -eq 0 ]]; then pass "the pinpad core's unit tests pass ($(tail -1 <<<"$out"))"; else
        fail "the pinpad core's unit tests pass" "$(grep -A3 '^not ok' <<<"$out")"
    fi
else
    fail "the pinpad core's unit tests are built (make pinpad)"
fi

# --- the reader -----------------------------------------------------------------------------------------------
out=$(opensc-tool --list-readers 2>&1)
check "opensc-tool -l lists the reader with a PIN pad" "$out" "PIN pad +tokenpin pinpad 0 00 00"
out=$("$control" "$reader" features)
check "GET_FEATURE_REQUEST lists VERIFY/MODIFY_PIN_DIRECT, IFD_PIN_PROPERTIES, GET_TLV_PROPERTIES (big-endian codes)" \
    "$out" "^answer 06 04 42 33 00 06 07 04 42 33 00 07 0A 04 42 33 00 0A 12 04 42 33 00 12$"
out=$("$control" "$reader" tlv)
check "GET_TLV_PROPERTIES: no display, validation 03, PINs 4-16, vendor 1209 product 0001 (little-endian)" "$out" \
    "^answer 01 02 00 00 02 01 03 03 01 00 06 01 04 07 01 10 08 .* 0B 02 09 12 0C 02 01 00$"

# --- PIV behind the pinpad: OpenSC ------------------------------------------------------------------------------
if insert_card --reset --profile piv-card; then pass "tokenpin-sim (piv-card) is behind the pinpad"; else
    fail "tokenpin-sim (piv-card) is behind the pinpad" "$(cat "$work/tokenpin-sim.log")"
fi
out=$(p11 --list-token-slots)
check "pkcs11-tool -L: the PIV token behind the pinpad has a PIN pad" "$out" "token flags *:.*PIN pad present"

keypad 123456
mark
out=$(p11 --login --list-objects; echo "exit $?")
check "pkcs11-tool --login with the right PIN on the keypad succeeds (private objects listed)" "$(tr '\n' ' ' <<<"$out")" \
    "Cardholder Fingerprints.*exit 0 $"
check "the card got one pinpad VERIFY: an 8-byte ASCII block, FF-padded (13 bytes)" "$(since_mark)" \
    "pinpad apdu 00 20 00 80 \[sensitive, 13 bytes\] -> 90 00"
check "the entry was taken from the keypad script" "$(entries_left)" "^0$"
figure "pkcs11-tool --login --list-objects, PIV"

keypad 000000
mark
out=$(p11 --login --list-objects)
check "pkcs11-tool --login with a wrong PIN on the keypad fails" "$out" "CKR_PIN_INCORRECT"
check "the card answered the wrong PIN 63 C2" "$(since_mark)" "pinpad apdu 00 20 00 80 .* -> 63 C2"
check "the PIV PIN's tries went down to 2" "$(piv_tries)" "^63 C2$"

for entry in CANCEL TIMEOUT 123; do
    case $entry in CANCEL) sw="64 01" ;; TIMEOUT) sw="64 00" ;; *) sw="64 03" ;; esac
    keypad "$entry"
    mark
    out=$(p11 --login --list-objects)
    check "keypad $entry: pkcs11-tool --login fails" "$out" "CKR_FUNCTION_CANCELED|CKR_PIN_LEN_RANGE|CKR_GENERAL_ERROR"
    check "keypad $entry: the reader answers $sw and sends nothing to the card" "$(since_mark)" \
        "VERIFY_PIN_DIRECT -> $sw \(the reader's answer; entries 1, apdus 0\)"
    check "keypad $entry: the PIV tries stay at 2" "$(piv_tries)" "^63 C2$"
done

# The card is pulled while the person is still typing.
keypad "123456 after 4000"
mark
p11 --login --list-objects >"$work/pulled.out" 2>&1 &
login_pid=$!
for _ in $(seq 50); do grep -q "keypad (PIN): PIN" "$log" && break; sleep 0.1; done
stop_card
wait "$login_pid"
login_status=$?
check "a card pulled during the entry fails the login" "$login_status $(cat "$work/pulled.out")" "^[1-9]"
check "the driver saw the card go during the entry and sent nothing" "$(since_mark)" \
    "card gone: it was pulled.*the card went during the entry.*VERIFY_PIN_DIRECT -> failed \(entries 1, apdus 0\)"
wait_for_removal
insert_card --profile piv-card
check "after reinsertion the PIV tries are still 2" "$(piv_tries)" "^63 C2$"
keypad 123456
out=$(p11 --login --list-objects)
check "the right PIN on the keypad logs in again" "$out" "Cardholder Fingerprints"
check "a right PIN restores the PIV tries to 3" "$(piv_tries)" "^63 C3|^90 00"

# --- the hostile client ---------------------------------------------------------------------------------------
# A valid PIN_VERIFY_STRUCTURE for PIV (OpenSC's layout) and mangled ones; the keypad holds an entry throughout.
verify="1E 1E 82 08 00 08 06 02 00 09 04 00 00 00 00 0D 00 00 00 00 20 00 80 08 FF FF FF FF FF FF FF FF"
keypad 123456
mark
refusal() {  # refusal NAME EXPECTED ARGS...: pinpad-control ARGS answers EXPECTED, takes no entry, sends nothing
    local name=$1 expected=$2
    shift 2
    out=$("$control" "$reader" "$@")
    check "$name" "$out" "$expected"
}
refusal "a truncated PIN_VERIFY_STRUCTURE (10 bytes) is refused: SCARD_E_UNSUPPORTED_FEATURE" "^rv 0x8010001F" \
    verify "1E 1E 82 08 00 08 06 02 00 09"
refusal "ulDataLength one more than the APDU is refused" "^rv 0x8010001F" verify "${verify/0D 00 00 00/0E 00 00 00}"
refusal "a trailing byte is refused" "^rv 0x8010001F" verify "$verify 00"
refusal "no structure at all is refused" "^rv 0x8010001F" verify -
oversized="1E 1E 82 08 00 08 06 02 00 09 04 00 00 00 00 60 EA 00 00 00 20 00 80 08 FF*59995"
refusal "a 60000-byte APDU template (consistent ulDataLength) is answered 6B 80" "^answer 6B 80$" verify "$oversized"
refusal "PIN coding 11 (RFU) is answered 6B 80" "^answer 6B 80$" verify "${verify/1E 1E 82/1E 1E 83}"
refusal "a PIN block past the template's data is answered 6B 80" "^answer 6B 80$" verify \
    "1E 1E 82 08 00 08 06 02 00 09 04 00 00 00 00 09 00 00 00 00 20 00 80 04 FF FF FF FF"
refusal "GET_FEATURE_REQUEST into 10 bytes is refused: SCARD_E_INSUFFICIENT_BUFFER" "^rv 0x80100008" features - 10
refusal "GET_TLV_PROPERTIES into 10 bytes is refused: SCARD_E_INSUFFICIENT_BUFFER" "^rv 0x80100008" tlv - 10
refusal "an unknown control code is refused: SCARD_E_UNSUPPORTED_FEATURE" "^rv 0x8010001F" 42330099 "00 01"
refusal "a PIN_MODIFY_STRUCTURE of 24 zero bytes is answered 6B 80" "^answer 6B 80$" modify "00*24"
check "none of them took the keypad entry" "$(entries_left)" "^1$"
check "none of them sent an APDU" "$(grep -c 'apdu' "$log")" "^0$"
out=$("$control" "$reader" verify "$verify")
check "pcscd still serves the reader: the valid structure verifies the PIV PIN" "$out" "^answer 90 00$"
# pcscd hands every driver its own 65548-byte answer buffer and checks the client's only afterwards: a client
# whose buffer cannot take the status word gets SCARD_E_INSUFFICIENT_BUFFER after the PIN went to the card.
keypad 123456
mark
out=$("$control" "$reader" verify "$verify" 1)
check "a 1-byte answer buffer: SCARD_E_INSUFFICIENT_BUFFER from pcscd" "$out" "^rv 0x80100008"
check "... after the reader took the entry and the card verified the PIN" "$(since_mark)" \
    "keypad \(PIN\): PIN.*pinpad apdu 00 20 00 80 .* -> 90 00"
keypad
out=$("$control" "$reader" verify "$verify")
check "an empty keypad script: the reader times out, 64 00" "$out" "^answer 64 00$"
stop_card
wait_for_removal

# --- OpenPGP behind the pinpad: gpg ---------------------------------------------------------------------------
rm -f "$state"
if insert_card --reset --profile openpgp; then pass "tokenpin-sim (openpgp) is behind the pinpad"; else
    fail "tokenpin-sim (openpgp) is behind the pinpad" "$(cat "$work/tokenpin-sim.log")"
fi
gpg_card_setup "$work/gnupg" "$reader"
echo enable-pinpad-varlen >>"$GNUPGHOME/scdaemon.conf"
# A pinentry with nothing to give: the pinpad prompt (a popup) closes at once, a keyboard PIN request fails.
cat >"$work/pinentry" <<'PINENTRY'
#!/bin/sh
echo "OK tokenpin test pinentry"
while read -r command rest; do
    case "$command" in
        GETPIN) echo "ERR 83886179 Operation cancelled <Pinentry>" ;;
        BYE) echo OK; exit 0 ;;
        *) echo OK ;;
    esac
done
PINENTRY
chmod +x "$work/pinentry"
echo "pinentry-program $work/pinentry" >>"$GNUPGHOME/gpg-agent.conf"
scd() { gpg-connect-agent "SCD $*" /bye 2>&1; }
retries() { gpg --card-status 2>&1 | sed -n 's/^PIN retry counter : //p'; }
serialno=$(scd SERIALNO | awk '/^S SERIALNO/ {print $3}')
check "gpg sees the OpenPGP card behind the pinpad" "$serialno" "^D27600012401"

keypad 123456
gpgconf --kill all
mark
out=$(scd CHECKPIN "$serialno")
check "gpg SCD CHECKPIN with the right PIN on the keypad (enable-pinpad-varlen) succeeds" "$out" "^OK$"
check "the card got a variable-length VERIFY: Lc 06 and six ASCII digits (11 bytes)" "$(since_mark)" \
    "block 0 bytes \(variable\).*pinpad apdu 00 20 00 81 \[sensitive, 11 bytes\] -> 90 00"
figure "gpg SCD CHECKPIN, OpenPGP, gpg-agent and scdaemon starting"
keypad 123456
mark
out=$(scd CHECKPIN "$serialno")
check "a second SCD CHECKPIN on the keypad succeeds" "$out" "^OK$"
figure "gpg SCD CHECKPIN, OpenPGP, scdaemon running"

keypad 000000
out=$(scd CHECKPIN "$serialno")
check "gpg SCD CHECKPIN with a wrong PIN on the keypad fails" "$out" "^ERR .*Bad PIN"
check "PW1's counter went down to 2" "$(retries)" "^2 0 3$"

keypad CANCEL
mark
out=$(scd CHECKPIN "$serialno")
check "keypad CANCEL: gpg SCD CHECKPIN fails" "$out" "^ERR "
check "keypad CANCEL: the reader answers 64 01" "$(since_mark)" "VERIFY_PIN_DIRECT -> 64 01"
keypad "123456 after 3000"
mark
out=$(scd CHECKPIN "$serialno")
check "an entry slower than the reader's 2-second timeout: gpg SCD CHECKPIN fails" "$out" "^ERR "
check "the slow entry: the reader answers 64 00 and sends nothing" "$(since_mark)" \
    "PIN after 3000 ms, slower than the reader's 2 s: timeout.*VERIFY_PIN_DIRECT -> 64 00 \(the reader's answer; entries 1, apdus 0\)"
check "PW1's counter is still 2" "$(retries)" "^2 0 3$"

keypad 123456 24681357 24681357
mark
out=$(scd PASSWD OPENPGP.1)
check "gpg SCD PASSWD changes PW1 on the pinpad (current PIN, new PIN twice)" "$out" "^OK$"
check "the card got one CHANGE REFERENCE DATA with both PINs (5 + 6 + 8 bytes)" "$(since_mark)" \
    "keypad \(new PIN again\): PIN.*pinpad apdu 00 24 00 81 \[sensitive, 19 bytes\] -> 90 00"
keypad 24681357
out=$(scd CHECKPIN "$serialno")
check "the new PIN passes SCD CHECKPIN on the keypad" "$out" "^OK$"
check "and restored PW1's counter to 3" "$(retries)" "^3 0 3$"
keypad 24681357 11111111 22222222
mark
out=$(scd PASSWD OPENPGP.1)
check "new PINs that differ: gpg SCD PASSWD fails" "$out" "^ERR "
check "new PINs that differ: the reader answers 64 02 and sends nothing" "$(since_mark)" \
    "MODIFY_PIN_DIRECT -> 64 02 \(the reader's answer; entries 3, apdus 0\)"
gpgconf --kill all

keypad 24681357 123456 123456
mark
out=$(p11 --change-pin)
check "OpenSC pkcs11-tool --change-pin changes the OpenPGP PIN back on the pinpad" "$out" "PIN successfully changed"
check "OpenSC's change: current and new PIN concatenated (5 + 8 + 6 bytes)" "$(since_mark)" \
    "pinpad apdu 00 24 00 81 \[sensitive, 19 bytes\] -> 90 00"
keypad 123456
mark
out=$(p11 --login --list-objects; echo "exit $?")
check "pkcs11-tool --login with the changed-back PIN on the keypad succeeds" "$out" "exit 0$"
check "OpenSC's OpenPGP verify is variable-length too (PW1 82, 11 bytes)" "$(since_mark)" \
    "pinpad apdu 00 20 00 82 \[sensitive, 11 bytes\] -> 90 00"
figure "pkcs11-tool --login --list-objects, OpenPGP"

finish
