#!/usr/bin/env bash
# real-clients.sh: the simulated card checked by clients nobody here wrote (OpenSC, GnuPG), through pcscd.
#
# Runs inside Simulator/pcscd-sandbox (it re-executes itself there when TOKENPIN_SANDBOX is not set), starts
# its own tokenpin-sim on the first sandbox port with a fresh state file, and checks:
#   opensc-tool --list-readers, --send-apdu SELECT and GET DATA;
#   gpg --card-status (serial, OpenPGP, PIN retry counter 3 0 3);
#   gpg --card-edit: change the PIN, block and unblock it (admin PIN and Reset Code), switch the key
#   attributes to Curve25519, generate keys on the card; gpg decrypting a message to the card's cv25519
#   key and signing with its Ed25519 key; a restarted simulator still decrypting; then the algorithms cards
#   ship with: key-attr RSA 2048, generate on the card and decrypt; keytocard of a software RSA subkey and
#   decrypt; key-attr NIST P-256 (gpg --expert), generate and decrypt;
#   a SELECT of an absent application keeping the OpenPGP application and its verified PIN;
#   OpenSC's PKCS#15 emulation (SELECT DATA for the three certificate instances): openpgp-tool generates an RSA
#   2048 decryption key, pkcs11-tool lists it and decrypts with it;
#   a YubiKey 5 (--profile yubikey5): its algorithm information (FA) lists NIST P-256, gpg sets P-256 (key-attr),
#   generates the keys, and tokenpin binds to the card's decryption key and verifies with it.
# The last line is "N passed, N failed"; the exit status is non-zero when anything failed.
#
# Usage: sudo Simulator/Tests/EndToEnd/real-clients.sh   (needs pcscd, vsmartcard-vpcd, opensc, gnupg, scdaemon,
#        openssl, and tokenpin built beside tokenpin-sim or named by TOKENPIN_BIN)

set -uo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ "${TOKENPIN_SANDBOX:-}" != 1 ]]; then
    exec "$script_dir/../../pcscd-sandbox" -- "$0" "$@"
fi

suite=real-clients
. "$script_dir/client-lib.sh"
suite_cleanup() { GNUPGHOME=$work/gnupg gpgconf --kill all 2>/dev/null; }

if insert_card --reset; then pass "tokenpin-sim inserted a card into '$reader'"; else
    fail "tokenpin-sim inserted a card into '$reader'" "$(cat "$work/tokenpin-sim.log")"
fi

# --- OpenSC -------------------------------------------------------------------------------------------------
out=$(opensc-tool --list-readers 2>&1)
check "opensc-tool --list-readers sees the reader with a card" "$out" "^[0-9]+ +Yes +.*$reader"

out=$(opensc-tool --reader "$reader" --send-apdu 00A4040006D27600012401 --send-apdu 00CA004F00 2>&1)
check "opensc-tool SELECT answers 9000" "$out" "SW1=0x90, SW2=0x00\)$"
check "opensc-tool GET DATA 4F returns the AID with the serial" "$out" \
    "D2 76 00 01 24 01 03 04 FF FE ${serial:0:2} ${serial:2:2} .*SW1=0x90|D2 76 00 01 24 01 03 04 FF FE ${serial:0:2} ${serial:2:2}"
out=$(opensc-tool --reader "$reader" --send-apdu 00A4040006D27600012401 --send-apdu 00CA00C400 2>&1)
check "opensc-tool GET DATA C4 shows counters 3 0 3" "$out" "01 7F 7F 7F 03 00 03"
out=$(opensc-tool --reader "$reader" --send-apdu 00A4040006D27600012401 --send-apdu 00CA00FF00 2>&1)
check "opensc-tool GET DATA of an unknown DO answers 6A88" "$out" "SW1=0x6A, SW2=0x88"

# --- GnuPG --------------------------------------------------------------------------------------------------
# gpg_card_setup and card_edit: GnuPG on this card through pcscd, and --card-edit driven by a script.
source "$script_dir/gpg-card.sh"
gpg_card_setup "$work/gnupg" "$reader"
gpg_batch=(gpg --batch --no-tty --pinentry-mode loopback)
# scdaemon keeps the card connected exclusively: stop it before another client uses the reader.
apdu() { gpgconf --kill all 2>/dev/null; opensc-tool --reader "$reader" "$@" 2>&1; }

out=$(gpg --card-status 2>&1)
check "gpg --card-status shows the OpenPGP application" "$out" "^Application type \.: OpenPGP"
check "gpg --card-status shows the serial number" "$out" "^Serial number \.\.\.\.: $serial"
check "gpg --card-status shows PIN retry counter : 3 0 3" "$out" "^PIN retry counter : 3 0 3"
check "gpg --card-status shows version 3.4" "$out" "^Version \.\.\.\.\.\.\.\.\.\.: 3\.4"

out=$(card_edit cardedit.prompt=passwd passphrase.enter=123456 passphrase.enter=24681357 passphrase.enter=24681357)
check "gpg changes the PIN" "$out" "SC_OP_SUCCESS|PIN changed"
out=$(apdu --send-apdu 00A4040006D27600012401 --send-apdu 00200082083234363831333537 2>&1)
check "the new PIN verifies (opensc-tool VERIFY 82)" "$(tail -1 <<<"$out")" "SW1=0x90, SW2=0x00"

# Block PW1 with three wrong PINs, then unblock it with the admin PIN.
apdu --send-apdu 00A4040006D27600012401 \
    --send-apdu 0020008206303030303030 --send-apdu 0020008206303030303030 --send-apdu 0020008206303030303030 \
    >"$work/block.log" 2>&1
check "three wrong PINs answer 63C2, 63C1, 63C0" "$(cat "$work/block.log")" "SW1=0x63, SW2=0xC0"
out=$(gpg --card-status 2>&1)
check "gpg --card-status shows the blocked PIN: 0 0 3" "$out" "^PIN retry counter : 0 0 3"
out=$(card_edit cardedit.prompt=admin cardedit.prompt=passwd cardutil.change_pin.menu=2 cardutil.change_pin.menu=q \
    passphrase.enter=12345678 passphrase.enter=123456 passphrase.enter=123456)
check "gpg unblocks the PIN with the admin PIN" "$out" "SC_OP_SUCCESS|PIN unblocked"
out=$(gpg --card-status 2>&1)
check "gpg --card-status shows 3 0 3 after the unblock" "$out" "^PIN retry counter : 3 0 3"

# A Reset Code, then unblock with it (gpg --card-edit: unblock).
out=$(card_edit cardedit.prompt=admin cardedit.prompt=passwd cardutil.change_pin.menu=4 cardutil.change_pin.menu=q \
    passphrase.enter=12345678 passphrase.enter=87654321 passphrase.enter=87654321)
check "gpg sets a Reset Code" "$out" "SC_OP_SUCCESS|Reset Code set"
out=$(gpg --card-status 2>&1)
check "gpg --card-status shows 3 3 3 with a Reset Code" "$out" "^PIN retry counter : 3 3 3"
apdu --send-apdu 00A4040006D27600012401 --send-apdu 0020008106303030303030 \
    --send-apdu 0020008106303030303030 --send-apdu 0020008106303030303030 >/dev/null 2>&1
out=$(card_edit cardedit.prompt=unblock passphrase.enter=87654321 passphrase.enter=112233 passphrase.enter=112233)
check "gpg unblocks the PIN with the Reset Code" "$out" "SC_OP_SUCCESS"
out=$(apdu --send-apdu 00A4040006D27600012401 --send-apdu 0020008206313132323333 2>&1)
check "the PIN set through the Reset Code verifies" "$(tail -1 <<<"$out")" "SW1=0x90, SW2=0x00"

# Key attributes: Ed25519 for signing and authentication, cv25519 for decryption.
out=$(card_edit cardedit.prompt=admin cardedit.prompt=key-attr cardedit.genkeys.algo=2 cardedit.genkeys.algo=2 \
    cardedit.genkeys.algo=2 keygen.curve=1 keygen.curve=1 keygen.curve=1 \
    passphrase.enter=12345678 passphrase.enter=12345678 passphrase.enter=12345678)
out=$(gpg --card-status 2>&1)
check "gpg switches the key attributes to Curve25519" "$out" "^Key attributes \.\.\.: ed25519 cv25519 ed25519"

# Generate the three keys on the card.
out=$(card_edit cardedit.prompt=admin cardedit.prompt=generate cardedit.genkeys.backup_enc=n \
    passphrase.enter=112233 passphrase.enter=12345678 passphrase.enter=112233 passphrase.enter=112233 \
    keygen.valid=0 "keygen.name=Card Holder" keygen.email=holder@example.org keygen.comment=)
check "gpg generates keys on the card" "$out" "KEY_CREATED"
out=$(gpg --card-status 2>&1)
check "gpg --card-status lists an encryption key" "$out" "^Encryption key\.\.\.\.: [0-9A-F ]{50}"
check "gpg --card-status shows the keys as generated on the card" "$out" "created \.\.\.\.: [0-9]{4}-"

# Decrypt a message encrypted to the card's cv25519 key; sign with its Ed25519 key.
echo "a message for the card" | gpg --batch --trust-model always -a -e -r holder@example.org >"$work/msg.asc" 2>&1
out=$("${gpg_batch[@]}" --passphrase 112233 -d "$work/msg.asc" 2>&1)
check "gpg decrypts a message to the card's cv25519 key" "$out" "^a message for the card$"
out=$(echo "signed text" | "${gpg_batch[@]}" --passphrase 112233 -u holder@example.org -s 2>/dev/null | gpg --batch --verify 2>&1)
check "gpg signs with the card's Ed25519 key and the signature verifies" "$out" "Good signature"

# Key import: gpg moves a software cv25519 subkey to the card (keytocard). gpg sends the scalar big-endian;
# if the card kept the wrong byte order it would compute a different shared secret and decryption would fail.
"${gpg_batch[@]}" --passphrase '' --quick-gen-key "Import Test <import@example.org>" ed25519 cert,sign never >/dev/null 2>&1
import_fpr=$(gpg --with-colons --list-keys import@example.org 2>/dev/null | awk -F: '/^fpr/ {print $10; exit}')
"${gpg_batch[@]}" --passphrase '' --quick-add-key "$import_fpr" cv25519 encr never >/dev/null 2>&1
echo "a message for the imported key" | gpg --batch --trust-model always -a -e -r import@example.org >"$work/imported.asc" 2>&1
out=$(gpg_dialog --edit-key "$import_fpr" -- keyedit.prompt="key 1" keyedit.prompt=keytocard \
    cardedit.genkeys.storekeytype=2 cardedit.genkeys.replace_key=y passphrase.enter=12345678 \
    passphrase.enter=12345678 keyedit.prompt=save)
subkey_fpr=$(gpg --with-colons --list-keys import@example.org 2>/dev/null | awk -F: '/^fpr/ {n++; if (n == 2) print $10}')
out=$(gpg --with-colons -K import@example.org 2>&1)
check "gpg moved the cv25519 subkey to the card (keytocard: the secret is now a card stub)" "$out" \
    "^ssb:.*:D276000124010304FFFE$serial"
out=$(gpg --card-status 2>&1 | sed -n 's/^Encryption key\.\.\.\.: //p' | tr -d ' ')
check "gpg --card-status shows the imported subkey as the encryption key" "$out" "^$subkey_fpr$"
out=$("${gpg_batch[@]}" --passphrase 112233 -d "$work/imported.asc" 2>&1)
check "the card decrypts with the imported (byte-reversed) cv25519 key" "$out" "^a message for the imported key$"

# A restarted simulator is the same card: counters and keys survive.
stop_card
gpgconf --kill all
if wait_for_removal; then pass "pcscd sees the card pulled when the simulator stops"; else
    fail "pcscd sees the card pulled when the simulator stops"
fi
if insert_card; then pass "the simulator restarts on the same state file"; else fail "the simulator restarts on the same state file"; fi
out=$("${gpg_batch[@]}" --passphrase 112233 -d "$work/imported.asc" 2>&1)
check "gpg decrypts with the imported key after the simulator restarted" "$out" "^a message for the imported key$"
out=$(gpg --card-status 2>&1)
check "the restarted card keeps its serial and counters" "$out" "^PIN retry counter : 3 3 3"

# --- RSA and NIST P-256 keys, as most cards carry them ------------------------------------------------------
# Key attributes RSA 2048 everywhere, keys generated on the card (replacing the cv25519/Ed25519 ones).
out=$(card_edit cardedit.prompt=admin cardedit.prompt=key-attr cardedit.genkeys.algo=1 cardedit.genkeys.size=2048 \
    cardedit.genkeys.algo=1 cardedit.genkeys.size=2048 cardedit.genkeys.algo=1 cardedit.genkeys.size=2048 \
    passphrase.enter=12345678 passphrase.enter=12345678 passphrase.enter=12345678)
out=$(gpg --card-status 2>&1)
check "gpg switches the key attributes to RSA 2048" "$out" "^Key attributes \.\.\.: rsa2048 rsa2048 rsa2048"
out=$(card_edit cardedit.prompt=admin cardedit.prompt=generate cardedit.genkeys.backup_enc=n \
    cardedit.genkeys.replace_keys=y passphrase.enter=112233 passphrase.enter=12345678 passphrase.enter=112233 \
    passphrase.enter=112233 keygen.valid=0 "keygen.name=RSA Holder" keygen.email=rsa@example.org keygen.comment=)
check "gpg generates RSA 2048 keys on the card" "$out" "KEY_CREATED"
echo "a message for the card's RSA key" | gpg --batch --trust-model always -a -e -r rsa@example.org >"$work/rsa.asc" 2>&1
out=$("${gpg_batch[@]}" --passphrase 112233 -d "$work/rsa.asc" 2>&1)
check "gpg decrypts a message to the card's RSA 2048 key" "$out" "^a message for the card's RSA key$"
out=$(echo "signed text" | "${gpg_batch[@]}" --passphrase 112233 -u rsa@example.org -s 2>/dev/null | gpg --batch --verify 2>&1)
check "gpg signs with the card's RSA key and the signature verifies" "$out" "Good signature"

# keytocard: a software RSA 2048 encryption subkey moved to the card (the 4D import with e, p, q).
"${gpg_batch[@]}" --passphrase '' --quick-gen-key "RSA Import <rsa-import@example.org>" rsa2048 cert,sign never >/dev/null 2>&1
rsa_import_fpr=$(gpg --with-colons --list-keys rsa-import@example.org 2>/dev/null | awk -F: '/^fpr/ {print $10; exit}')
"${gpg_batch[@]}" --passphrase '' --quick-add-key "$rsa_import_fpr" rsa2048 encr never >/dev/null 2>&1
echo "a message for the imported RSA key" | gpg --batch --trust-model always -a -e -r rsa-import@example.org \
    >"$work/rsa-imported.asc" 2>&1
out=$(gpg_dialog --edit-key "$rsa_import_fpr" -- keyedit.prompt="key 1" keyedit.prompt=keytocard \
    cardedit.genkeys.storekeytype=2 cardedit.genkeys.replace_key=y passphrase.enter=12345678 \
    passphrase.enter=12345678 keyedit.prompt=save)
out=$(gpg --with-colons -K rsa-import@example.org 2>&1)
check "gpg moved the RSA subkey to the card (keytocard)" "$out" "^ssb:.*:D276000124010304FFFE$serial"
out=$("${gpg_batch[@]}" --passphrase 112233 -d "$work/rsa-imported.asc" 2>&1)
check "the card decrypts with the imported RSA key" "$out" "^a message for the imported RSA key$"

# nist_p256_keys CARD PIN NAME EMAIL: key attributes NIST P-256 (ECDSA, ECDH, ECDSA; gpg offers the NIST curves in
# expert mode) and the three keys generated on the card, for NAME <EMAIL>, checked and named as on CARD.
nist_p256_keys() {
    local card=$1 pin=$2
    out=$(gpg_dialog --expert --card-edit -- cardedit.prompt=admin cardedit.prompt=key-attr cardedit.genkeys.algo=2 \
        keygen.curve=3 cardedit.genkeys.algo=2 keygen.curve=3 cardedit.genkeys.algo=2 keygen.curve=3 \
        passphrase.enter=12345678 passphrase.enter=12345678 passphrase.enter=12345678)
    out=$(gpg --card-status 2>&1)
    check "gpg switches the key attributes of $card to NIST P-256" "$out" \
        "^Key attributes \.\.\.: nistp256 nistp256 nistp256"
    out=$(card_edit cardedit.prompt=admin cardedit.prompt=generate cardedit.genkeys.backup_enc=n \
        cardedit.genkeys.replace_keys=y passphrase.enter="$pin" passphrase.enter=12345678 passphrase.enter="$pin" \
        passphrase.enter="$pin" keygen.valid=0 "keygen.name=$3" "keygen.email=$4" keygen.comment=)
    check "gpg generates NIST P-256 keys on $card" "$out" "KEY_CREATED"
}
nist_p256_keys "the card" 112233 "NIST Holder" nist@example.org
echo "a message for the card's P-256 key" | gpg --batch --trust-model always -a -e -r nist@example.org >"$work/nist.asc" 2>&1
out=$("${gpg_batch[@]}" --passphrase 112233 -d "$work/nist.asc" 2>&1)
check "gpg decrypts a message to the card's NIST P-256 key" "$out" "^a message for the card's P-256 key$"
out=$(echo "signed text" | "${gpg_batch[@]}" --passphrase 112233 -u nist@example.org -s 2>/dev/null | gpg --batch --verify 2>&1)
check "gpg signs with the card's ECDSA P-256 key and the signature verifies" "$out" "Good signature"

# --- SELECT semantics --------------------------------------------------------------------------------------
# ISO 7816-4: a SELECT naming no application answers 6A82 and changes nothing: the OpenPGP application stays
# selected with PW1 verified (the PIN query answers 9000, not 6D00 or 63C3).
out=$(apdu --send-apdu 00A4040006D27600012401 --send-apdu 0020008206313132323333 \
    --send-apdu 00A4040005A000000308 --send-apdu 0020008200)
check "a SELECT of an absent application (PIV) answers 6A82" "$out" "SW1=0x6A, SW2=0x82"
check "after it the OpenPGP application is still selected and PW1 still verified" "$(tail -1 <<<"$out")" \
    "SW1=0x90, SW2=0x00"

# --- OpenSC's PKCS#11 module on the OpenPGP card ------------------------------------------------------------
# The PKCS#15 emulation reads the three cardholder certificate instances with SELECT DATA (00 A5 0i 04) before it
# binds. vpcd announces no transfer limits through PC/SC part 10, so OpenSC would assume short APDUs and cut a
# generated RSA 2048 public key short (Le 256); a YubiKey's own CCID reader announces its limits. This
# configuration gives OpenSC the card's (7F66: 2048 each way).
module=${TOKENPIN_PKCS11_MODULE:-$(ls /usr/lib/*/opensc-pkcs11.so /usr/lib/opensc-pkcs11.so 2>/dev/null | head -1)}
cat >"$work/opensc.conf" <<CONF
app default {
    reader_driver pcsc {
        max_send_size = 2048;
        max_recv_size = 2048;
    }
}
CONF
gpgconf --kill all
opensc() { OPENSC_CONF=$work/opensc.conf "$@" 2>&1; }
out=$(opensc openpgp-tool --reader "$reader" --verify CHV3 --pin 12345678 --gen-key 2 --key-type rsa2048)
check "openpgp-tool generates an RSA 2048 decryption key (a fingerprint, not zeros)" "$(grep -A1 '^Fingerprint' <<<"$out")" \
    "[1-9A-F]"
out=$(opensc pkcs11-tool --module "$module" --list-objects)
check "OpenSC's PKCS#15 emulation binds: pkcs11-tool lists the RSA 2048 decryption key" "$out" \
    "Public Key Object; RSA 2048 bits"
opensc pkcs11-tool --module "$module" --read-object --type pubkey --id 02 --output-file "$work/dec.der" >/dev/null
openssl pkey -pubin -inform DER -in "$work/dec.der" -out "$work/dec.pem" 2>/dev/null
printf 'a secret for the OpenPGP card through PKCS#11' >"$work/p11-plain"
openssl pkeyutl -encrypt -pubin -inkey "$work/dec.pem" -pkeyopt rsa_padding_mode:pkcs1 -in "$work/p11-plain" \
    -out "$work/p11-cipher" 2>/dev/null
out=$(opensc pkcs11-tool --module "$module" --login --pin 112233 --decrypt --id 02 --mechanism RSA-PKCS \
    --input-file "$work/p11-cipher" --output-file "$work/p11-decrypted")
if [[ -s "$work/p11-plain" ]] && cmp -s "$work/p11-plain" "$work/p11-decrypted"; then
    pass "pkcs11-tool --decrypt with the card's RSA key (OpenSC ID 02) returns the message"
else
    fail "pkcs11-tool --decrypt with the card's RSA key (OpenSC ID 02) returns the message" "$out"
fi

# --- A YubiKey 5: NIST P-256 from its algorithm information, and tokenpin bound to the key -------------------
stop_card
wait_for_removal
if insert_card --reset --profile yubikey5; then pass "tokenpin-sim inserted a YubiKey 5"; else
    fail "tokenpin-sim inserted a YubiKey 5" "$(cat "$work/tokenpin-sim.log")"
fi
# hex_answer OPENSC-TOOL-OUTPUT: the bytes opensc-tool printed, as one hex string.
hex_answer() { sed -n 's/^\(\([0-9A-F][0-9A-F] \)\{1,16\}\).*/\1/p' <<<"$1" | tr -d ' \n'; }
# OpenSC's PIV driver claims a YubiKey and re-selects PIV before each command; -c default sends the APDUs as they are.
out=$(apdu -c default --send-apdu 00A4040006D27600012401 --send-apdu 00CA00FA00)
fa=$(hex_answer "$out")
check "the YubiKey's FA lists ECDSA on NIST P-256 for signing (C1 13 + OID)" "$fa" "C109132A8648CE3D030107"
check "the YubiKey's FA lists ECDH on NIST P-256 for decryption (C2 12 + OID)" "$fa" "C209122A8648CE3D030107"
if [[ -n "$fa" && "$fa" != *C1??122A8648CE3D030107* && "$fa" != *C10B122B060104019755010501* ]]; then
    pass "the YubiKey's FA lists no ECDH for signing (which PUT DATA C1 refuses)"
else
    fail "the YubiKey's FA lists no ECDH for signing (which PUT DATA C1 refuses)" "$fa"
fi
gpg_card_setup "$work/gnupg-yubikey" "$reader"
nist_p256_keys "the YubiKey" 123456 "YubiKey Holder" yubikey@example.org
gpgconf --kill all   # scdaemon holds the card: release it for tokenpin
tokenpin=${TOKENPIN_BIN:-$(dirname "$TOKENPIN_SIM_BIN")}/tokenpin
printf 'kdf-memory-mib = 8\nkdf-passes = 1\n' >"$work/tokenpin.conf"
tp() { "$tokenpin" --local --store "$work/tokenpin-store" --config "$work/tokenpin.conf" --reader "$reader" "$@" 2>&1; }
out=$(printf '482916\n482916\n' | tp enrol --pin-stdin)
out=$(printf '482916\n123456\n' | tp toggle token on --pin-stdin)
check "tokenpin binds to the P-256 key gpg made on the YubiKey" "$out" "Token enabled"
# The record's JSON through the tests' reader of both record formats (a two-copy file is not a text file).
record=$(python3 "$script_dir/../../../Tests/EndToEnd/record.py" json "$work/tokenpin-store/$(id -un).json" 2>&1)
check "the binding names the algorithm NIST P-256" "$record" \
    '"algorithm" ?: ?"nistp256"'
out=$(tp --json verify --method token --pin-stdin <<<123456)
check "tokenpin verifies with the YubiKey's P-256 key" "$out" '"method":"token"'

finish
