#!/usr/bin/env bash
# The admin and unblocking PINs typed on the reader's own keypad, end to end: tokenpin through a private pcscd whose
# reader "tokenpin pinpad 0" is the virtual pinpad (Simulator/pcscd-sandbox --pinpad), tokenpin-sim behind it, its
# keypad scripted through TOKENPIN_PINPAD_KEYS (one entry per PIN request).
#   OpenPGP (the default profile): `toggle token on --generate-key` takes the admin PIN (VERIFY PW3, 83) on the
#   keypad, once, after the card PIN at the keyboard; `token unblock --admin` takes it there too (the new card PIN at
#   the keyboard, as gpg's scdaemon does it); a wrong admin PIN is counted on PW3, CANCEL, TIMEOUT and the card
#   pulled during the entry count nothing; the Reset Code stays at the keyboard, saying why.
#   PIV (the YubiKey profile, whose metadata tells the PUK's tries): `token unblock` takes the PUK, the new PIN and
#   the new PIN again on the keypad (RESET RETRY COUNTER through MODIFY_PIN_DIRECT), nothing at the keyboard; a wrong
#   PUK is counted, CANCEL, TIMEOUT, new PINs that differ and the card pulled count nothing.
# The tries left the keypad message names ("Enter the admin PIN / PUK on the keypad of ‹reader›") show what was
# counted. It prints the SCardControl calls and APDUs the driver saw for one PUK unblock.
. "$(dirname "$0")/lib.sh"

SIM=${TOKENPIN_SIM_BIN:-$BIN/tokenpin-sim}
enter_sandbox --pinpad
trap 'stop_sim; cleanup' EXIT

said() { grep -q "$1" "$WORK/err"; }

# figure NAME WHAT: the SCardControl calls (by name) and APDUs the driver logged since $LOG was emptied.
figure() {
    local names
    names=$(grep -oE 'control [0-9A-Z_]+( ->|:)' "$LOG" | grep -v '_PIN_DIRECT ->' | sed 's/^control //; s/ ->$//; s/:$//' |
        sort | uniq -c | awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1}')
    echo "# figure: $1: $2: $(grep -c 'control #[0-9]' "$LOG") SCardControl ($names), $(grep -c ' apdu ' "$LOG") APDUs" \
        "($(grep -c 'pinpad apdu ' "$LOG") built by the pinpad)"
}

# pulled NAME CODE COMMAND...: COMMAND runs while the keypad's entry is delayed; the card goes meanwhile.
pulled() {
    local name=$1 want=$2; shift 2
    "$@" <&0 >"$WORK/out" 2>"$WORK/err" &
    local command=$!
    sleep 0.5; stop_sim; wait "$command"; local code=$?
    check "$name (exit $code)" test "$code" = "$want"
}

run_openpgp() {
    local state=$WORK/openpgp.json store=$WORK/store-openpgp
    tp() { "$BIN/tokenpin" --local --store "$store" --config "$CONFIG" --reader "$READER" "$@"; }
    start_sim "$state" 0C0FFEE7 --reset || { not_ok "openpgp: the card is inserted"; return; }
    printf '482916\n482916\n' | tp enrol --pin-stdin >/dev/null 2>&1

    keypad 12345678
    expect_code "openpgp: --generate-key: the card PIN at the keyboard, the admin PIN on the keypad" 0 \
        tp toggle token on --generate-key --yes --pin-stdin < <(printf '482916\n123456\n')
    check "openpgp: ... the keypad took the admin PIN, once" test "$(entries_left)" = 0
    check "openpgp: ... and the person was told where to type it" \
        said "Enter the admin PIN on the keypad of $READER (card .*, 3 tries left"

    keypad 87654321
    expect_code "openpgp: unblock --admin, a wrong admin PIN on the keypad" 1 \
        tp token unblock --admin --pin-stdin < <(printf '135790\n135790\n')
    check "openpgp: ... is refused as the admin PIN" said "wrong admin PIN"
    keypad CANCEL
    expect_code "openpgp: unblock --admin, CANCEL on the keypad is cancelled" 130 \
        tp token unblock --admin --pin-stdin < <(printf '135790\n135790\n')
    check "openpgp: ... the wrong one was counted on PW3" said "Enter the admin PIN on the keypad .* 2 tries left"
    keypad TIMEOUT
    expect_code "openpgp: unblock --admin, a keypad TIMEOUT is cancelled" 130 \
        tp token unblock --admin --pin-stdin < <(printf '135790\n135790\n')
    keypad "12345678 after 1500"
    pulled "openpgp: the card pulled during the admin PIN entry: token unavailable" 6 \
        tp token unblock --admin --pin-stdin < <(printf '135790\n135790\n')
    start_sim "$state" 0C0FFEE7 || { not_ok "openpgp: the card is back"; return; }
    keypad 12345678; : >"$LOG"
    expect_code "openpgp: unblock --admin with the admin PIN on the keypad, the new card PIN at the keyboard" 0 \
        tp token unblock --admin --pin-stdin < <(printf '135790\n135790\n')
    figure openpgp "one admin PIN unblock on the keypad"
    check "openpgp: ... CANCEL, TIMEOUT and the pulled card counted nothing" \
        said "Enter the admin PIN on the keypad .* 2 tries left"
    check "openpgp: ... no admin PIN prompt at the keyboard" bash -c "! grep -q 'Admin PIN for' '$WORK/err'"
    keypad 135790
    expect_code "openpgp: verify by token with the new card PIN on the keypad" 0 tp verify --method token --pin-stdin </dev/null

    # The Reset Code goes to the card with the new PIN in one command: typed at the keyboard, and said why.
    opensc-tool --reader "$READER" -s "00 A4 04 00 06 D2 76 00 01 24 01" -s "00 20 00 83 08 31 32 33 34 35 36 37 38" \
        -s "00 DA 00 D3 08 38 37 36 35 34 33 32 31" >/dev/null 2>&1
    keypad 99999999
    expect_code "openpgp: unblock with the Reset Code at the keyboard" 0 \
        tp token unblock --pin-stdin < <(printf '87654321\n123456\n123456\n')
    check "openpgp: ... saying why the keypad is not used" said "Keypad not used: the Reset Code goes to the card"
    check "openpgp: ... and the keypad was not asked" test "$(entries_left)" = 1
    stop_sim
}

run_piv() {
    local state=$WORK/piv.json store=$WORK/store-piv
    tp() { "$BIN/tokenpin" --local --store "$store" --config "$CONFIG" --reader "$READER" "$@"; }
    start_sim "$state" 0C0FFEE8 --reset --profile yubikey || { not_ok "piv: the card is inserted"; return; }
    printf '482916\n482916\n' | tp enrol --pin-stdin >/dev/null 2>&1
    expect_code "piv: bind a generated key (--no-pinpad: PIN, card PIN, management key)" 0 \
        tp --no-pinpad toggle token on --app piv --generate-key --yes --pin-stdin \
        < <(printf '482916\n123456\n010203040506070801020304050607080102030405060708\n')

    keypad 87654321 135792 135792
    expect_code "piv: unblock, a wrong PUK on the keypad" 1 tp token unblock --pin-stdin </dev/null
    check "piv: ... is refused as the PUK" said "wrong PUK"
    check "piv: ... the person was told to type the PUK and the new PIN there" \
        said "Enter the PUK on the keypad of $READER, then the new card PIN twice (card .*, 3 tries left"
    keypad CANCEL
    expect_code "piv: unblock, CANCEL on the keypad is cancelled" 130 tp token unblock --pin-stdin </dev/null
    check "piv: ... the wrong PUK was counted" said "Enter the PUK on the keypad .* 2 tries left"
    keypad 12345678 TIMEOUT
    expect_code "piv: unblock, a keypad TIMEOUT at the new PIN is cancelled" 130 tp token unblock --pin-stdin </dev/null
    keypad 12345678 135792 135793
    expect_code "piv: unblock, new PINs that differ are refused" 5 tp token unblock --pin-stdin </dev/null
    check "piv: ... saying why" said "differ"
    keypad 12345678 135792 "135792 after 1500"
    pulled "piv: the card pulled during the PUK entry: token unavailable" 6 tp token unblock --pin-stdin </dev/null
    start_sim "$state" 0C0FFEE8 --profile yubikey || { not_ok "piv: the card is back"; return; }
    keypad 12345678 135792 135792; : >"$LOG"
    expect_code "piv: unblock with the PUK, new PIN and new PIN again on the keypad (nothing on stdin)" 0 \
        tp token unblock --pin-stdin </dev/null
    check "piv: ... all three entries were taken on the keypad" test "$(entries_left)" = 0
    check "piv: ... CANCEL, TIMEOUT, entries that differ and the pulled card counted nothing" \
        said "Enter the PUK on the keypad .* 2 tries left"
    check "piv: ... no PUK prompt at the keyboard" bash -c "! grep -q 'PUK for' '$WORK/err'"
    figure piv "one PUK unblock on the keypad"
    keypad 135792
    expect_code "piv: verify by token with the new card PIN on the keypad" 0 tp verify --method token --pin-stdin </dev/null
    stop_sim
}

run_openpgp
run_piv
finish
