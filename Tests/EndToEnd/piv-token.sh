#!/usr/bin/env bash
# The token bound to a PIV key, end to end through a private pcscd with tokenpin-sim (Simulator/pcscd-sandbox).
# On a YubiKey (`--profile yubikey`, OpenPGP beside PIV) yubico-piv-tool generates a P-256 key in 9D and a
# certificate for it is imported, as a user would set the card up, and tokenpin binds that key. On a PIV card
# alone (`--profile piv-card`) Debian's yubico-piv-tool cannot authenticate (it wants the YubiKey extensions) and
# piv-tool cannot generate (OpenSSL 3), so tokenpin generates the key itself: `--generate-key --yes` with the
# factory management key (PIN, card PIN, management key), into the first empty retired slot, 82. Then, for both: `toggle token on --app piv`,
# verify with the card, a wrong card PIN falls back to the PIN (counted on the card), a 9-byte card PIN is
# refused without costing a try, `token change-pin`, `token unblock` with the PUK after blocking the PIN, the
# card pulled (token unavailable, the PIN still verifies), and `mode = both`; a fake card with the same identity
# replaying captured GENERAL AUTHENTICATE answers opens nothing; a card without PIV is refused. RSA 2048 in 82 and
# P-384 in 83, made by yubico-piv-tool, bind with --slot and verify. On the YubiKey `tokenpin bench
# --token` prints the APDUs per verify and the time against the same APDUs bare.
. "$(dirname "$0")/lib.sh"

SIM=${TOKENPIN_SIM_BIN:-$BIN/tokenpin-sim}
if [ "${TOKENPIN_SANDBOX:-}" != 1 ]; then
    if ! command -v pcscd >/dev/null || ! command -v yubico-piv-tool >/dev/null || ! command -v openssl >/dev/null \
        || [ ! -x "$SIM" ] || ! ls /usr/lib/pcsc/drivers/serial/libifdvpcd.so* >/dev/null 2>&1; then
        echo "skipped: needs pcscd, vsmartcard-vpcd, yubico-piv-tool, openssl and tokenpin-sim"; finish; exit $?
    fi
    trap - EXIT; rm -rf "$WORK"
    exec "$ROOT/Simulator/pcscd-sandbox" -- bash "$0"
fi

trap 'stop_sim; cleanup' EXIT
ykpiv() { yubico-piv-tool --reader "$READER" "$@" 2>&1; }

# piv_setup NAME: a P-256 key in 9D made by yubico-piv-tool with the default management key, and a certificate
# for it in 9D (self-signed where yubico-piv-tool can, else from a software CA, Yubico/yubico-piv-tool#388).
piv_setup() {
    local name=$1
    ykpiv -a set-chuid >"$WORK/out"
    ykpiv -a generate -s 9d -A ECCP256 -o "$WORK/$name-9d.pem" >"$WORK/out"
    check "$name: yubico-piv-tool generates a P-256 key in 9D" grep -q "BEGIN PUBLIC KEY" "$WORK/$name-9d.pem"
    ykpiv -a verify-pin -P 123456 -a selfsign-certificate -s 9d -S "/CN=$name piv token/" -i "$WORK/$name-9d.pem" \
        -o "$WORK/$name-cert.pem" >"$WORK/out"
    if ! grep -q "BEGIN CERTIFICATE" "$WORK/$name-cert.pem" 2>/dev/null; then
        openssl req -new -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$WORK/ca.key" \
            -subj "/CN=test CA" -out "$WORK/ca.pem" >/dev/null 2>&1
        openssl req -new -key "$WORK/ca.key" -subj "/CN=$name piv token" -out "$WORK/req.csr" 2>/dev/null
        openssl x509 -req -in "$WORK/req.csr" -CA "$WORK/ca.pem" -CAkey "$WORK/ca.key" \
            -force_pubkey "$WORK/$name-9d.pem" -set_serial 1 -days 30 -out "$WORK/$name-cert.pem" 2>/dev/null
    fi
    ykpiv -a import-certificate -s 9d -i "$WORK/$name-cert.pem" >"$WORK/out"
    check "$name: the 9D certificate is imported" grep -q "Successfully imported" "$WORK/out"
}

# card_tries STORE: the card PIN's tries left as `tokenpin status` reads them from the card.
card_tries() {
    "$BIN/tokenpin" --local --store "$1" --config "$CONFIG" --reader "$READER" --json status | json_field token.cardTriesLeft
}

# run_profile PROFILE SETUP: the whole flow on one simulated card; SETUP is `9d` (yubico-piv-tool's key) or
# `generate` (tokenpin's own, in 82).
run_profile() {
    local name=$1 setup=$2 state=$WORK/$1.json store=$WORK/store-$1 slot=9d
    tp() { "$BIN/tokenpin" --local --store "$store" --config "$CONFIG" --reader "$READER" "$@"; }
    local tap=$WORK/$name.tap
    start_sim "$state" 0C0FFEE5 --reset --profile "$name" --tap "$tap" || { not_ok "$name: the card is inserted"; return; }
    printf '482916\n482916\n' | tp enrol --pin-stdin >/dev/null 2>&1
    if [ "$setup" = 9d ]; then
        piv_setup "$name"
        expect_code "$name: bind the 9D key with --app piv (PIN, card PIN)" 0 \
            tp toggle token on --app piv --pin-stdin < <(printf '482916\n123456\n')
    else
        slot=82
        expect_code "$name: --generate-key without --yes refuses the factory management key" 2 \
            tp toggle token on --app piv --generate-key --pin-stdin \
            < <(printf '482916\n123456\n010203040506070801020304050607080102030405060708\n')
        check "$name: ... saying why" grep -q "factory management key" "$WORK/err"
        expect_code "$name: --generate-key --yes (PIN, card PIN, management key)" 0 \
            tp toggle token on --app piv --generate-key --yes --pin-stdin \
            < <(printf '482916\n123456\n010203040506070801020304050607080102030405060708\n')
    fi
    check "$name: the binding names the application, the slot and the algorithm" \
        bash -c "grep -rqE '\"application\" ?: ?\"piv\"' '$store' && grep -rqE '\"slot\" ?: ?\"$slot\"' '$store' \
            && grep -rqE '\"algorithm\" ?: ?\"nistp256\"' '$store'"
    # Each GENERAL AUTHENTICATE (87) answer the line carried, the bind's first, replayed by a fake card from right
    # after the bind on.
    check_replays "$name" "$tap" 87 "$state" 0C0FFEE5 --profile "$name" || return
    expect_code "$name: verify with the card" 0 tp --json verify --method token --pin-stdin <<<123456
    check "$name: verified by the token" grep -q '"method":"token"' "$WORK/out"
    expect_code "$name: verify with the card again (the challenge rotated)" 0 tp verify --method token --pin-stdin <<<123456

    # The fallback is for a person at the terminal (scripts must name --method): typed on a pseudo-terminal.
    python3 "$ROOT/Tests/TokenpinCLITests/Support/keyboard.py" 'wait:Card PIN|000000\r|wait:falling back to the PIN|wait:PIN: |482916\r' \
        -- "$BIN/tokenpin" --local --store "$store" --config "$CONFIG" --reader "$READER" verify >"$WORK/out" 2>&1
    check "$name: a wrong card PIN falls back to the PIN, which verifies" grep -q "^EXIT 0" "$WORK/out"
    check "$name: the fallback says why" grep -q "wrong card PIN" "$WORK/out"
    card_tries "$store" >"$WORK/tries" 2>&1
    check "$name: the wrong card PIN counted on the card ($(cat "$WORK/tries"))" test "$(cat "$WORK/tries")" = 2
    expect_code "$name: a card PIN of 9 bytes is refused" 6 tp verify --method token --pin-stdin <<<123456789
    check "$name: ... saying why" grep -q "a PIV PIN has 1 to 8 bytes" "$WORK/err"
    check "$name: ... and costs no try on the card" test "$(card_tries "$store")" = 2

    expect_code "$name: token change-pin" 0 tp token change-pin --app piv --pin-stdin < <(printf '123456\n24681357\n24681357\n')
    expect_code "$name: verify with the new card PIN" 0 tp verify --method token --pin-stdin <<<24681357
    for _ in 1 2 3; do tp verify --method token --pin-stdin <<<000000 >/dev/null 2>&1; done
    expect_code "$name: the blocked card PIN is refused" 1 tp verify --method token --pin-stdin <<<24681357
    expect_code "$name: token unblock with the PUK" 0 tp token unblock --app piv --pin-stdin < <(printf '12345678\n13572468\n13572468\n')
    expect_code "$name: verify with the card PIN the PUK set" 0 tp verify --method token --pin-stdin <<<13572468

    if [ "$setup" = 9d ]; then
        echo "# $name: tokenpin bench --token"
        printf '13572468\n' | tp bench --token --iterations "${BENCH_RUNS:-20}" --pin-stdin 2>&1 | sed 's/^/#   /' \
            | tee "$WORK/bench"
        check "$name: bench --token: APDUs per verify as counted (5 with a CHUID GUID)" \
            grep -qE 'APDUs per verify: +5$' "$WORK/bench"
        check "$name: bench --token times the same APDUs bare" grep -q 'bare, same APDUs: .*5 x SCardTransmit' "$WORK/bench"
    fi

    stop_sim
    expect_code "$name: the card pulled: the token is unavailable" 6 tp verify --method token --pin-stdin <<<13572468
    expect_code "$name: the card pulled: the PIN still verifies" 0 tp verify --method pin --pin-stdin <<<482916

    # mode = both, on a fresh record: the PIN and the card together.
    start_sim "$state" 0C0FFEE5 --profile "$name" || { not_ok "$name: the card is back"; return; }
    local both=$WORK/store-$name-both
    tpb() { "$BIN/tokenpin" --local --store "$both" --config "$CONFIG" --reader "$READER" "$@"; }
    printf '482916\n482916\n' | tpb enrol --pin-stdin >/dev/null 2>&1
    if [ "$setup" = 9d ]; then
        expect_code "$name: bind in mode both" 0 \
            tpb toggle token on --app piv --mode both --pin-stdin < <(printf '482916\n13572468\n')
    else
        # A key tokenpin generated has no certificate, and a PIV card names its keys only through certificates:
        # a new binding generates a new key (into 83).
        expect_code "$name: bind in mode both" 0 tpb toggle token on --app piv --generate-key --yes --mode both \
            --pin-stdin < <(printf '482916\n13572468\n010203040506070801020304050607080102030405060708\n')
    fi
    expect_code "$name: mode both verifies with the PIN and the card" 0 \
        tpb --json verify --method token --pin-stdin < <(printf '482916\n13572468\n')
    check "$name: ... both were used" grep -q '"method":"both"' "$WORK/out"
    expect_code "$name: mode both refuses a wrong card PIN" 1 \
        tpb verify --method token --pin-stdin < <(printf '482916\n000000\n')
    stop_sim
}

run_profile yubikey 9d
run_profile piv-card generate

# run_slot ALGORITHM SLOT NAME: yubico-piv-tool's ALGORITHM key in SLOT of a fresh YubiKey (a certificate from the
# software CA), bound with --slot, verified, a wrong card PIN refused and counted.
run_slot() {
    local algorithm=$1 slot=$2 name=$3 store=$WORK/store-$3
    tp() { "$BIN/tokenpin" --local --store "$store" --config "$CONFIG" --reader "$READER" "$@"; }
    local tap=$WORK/$name.tap
    start_sim "$WORK/$name.json" 0C0FFEE5 --reset --profile yubikey --tap "$tap" \
        || { not_ok "$name: the card is inserted"; return; }
    ykpiv -a generate -s "$slot" -A "$algorithm" -o "$WORK/$name.pem" >"$WORK/out"
    [ -s "$WORK/ca.key" ] || openssl req -new -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout "$WORK/ca.key" -subj "/CN=test CA" -out "$WORK/ca.pem" >/dev/null 2>&1
    openssl req -new -key "$WORK/ca.key" -subj "/CN=$name" -out "$WORK/$name.csr" 2>/dev/null
    openssl x509 -req -in "$WORK/$name.csr" -CA "$WORK/ca.pem" -CAkey "$WORK/ca.key" -force_pubkey "$WORK/$name.pem" \
        -set_serial 3 -days 30 -out "$WORK/$name-cert.pem" 2>/dev/null
    ykpiv -a import-certificate -s "$slot" -i "$WORK/$name-cert.pem" >"$WORK/out"
    check "$name: yubico-piv-tool made $algorithm in $slot with its certificate" grep -q "Successfully imported" "$WORK/out"
    printf '482916\n482916\n' | tp enrol --pin-stdin >/dev/null 2>&1
    expect_code "$name: bind the key in $slot with --slot $slot" 0 \
        tp toggle token on --app piv --slot "$slot" --pin-stdin < <(printf '482916\n123456\n')
    check "$name: the binding names slot $slot and $name" \
        bash -c "grep -rqE '\"slot\" ?: ?\"$slot\"' '$store' && grep -rqE '\"algorithm\" ?: ?\"$name\"' '$store'"
    check_replays "$name" "$tap" 87 "$WORK/$name.json" 0C0FFEE5 --profile yubikey || return
    expect_code "$name: verify with the card" 0 tp verify --method token --pin-stdin <<<123456
    expect_code "$name: verify with the card again" 0 tp verify --method token --pin-stdin <<<123456
    expect_code "$name: a wrong card PIN is refused" 1 tp verify --method token --pin-stdin <<<000000
    check "$name: ... and counted on the card" test "$(card_tries "$store")" = 2
    stop_sim
}
run_slot RSA2048 82 rsa2048
run_slot ECCP384 83 nistp384

# A card without the PIV application: refused by name before any PIN reaches a card.
start_sim "$WORK/openpgp.json" 0C0FFEE5 --reset --profile openpgp || not_ok "openpgp: the card is inserted"
store=$WORK/store-openpgp
printf '482916\n482916\n' | "$BIN/tokenpin" --local --store "$store" --config "$CONFIG" enrol --pin-stdin >/dev/null 2>&1
expect_code "a card without PIV: toggle token on --app piv is refused" 6 "$BIN/tokenpin" --local --store "$store" \
    --config "$CONFIG" --reader "$READER" toggle token on --app piv --pin-stdin < <(printf '482916\n123456\n')
check "a card without PIV: ... naming what is missing" grep -q "PIV" "$WORK/err"
stop_sim

finish
