#!/usr/bin/env bash
# ykman-clients.sh: the simulated YubiKey 5 (--profile yubikey5) checked by Yubico's own ykman, through pcscd.
#
# ykman (yubikey-manager, from PyPI) is installed into a venv first, outside the sandbox, whose network namespace
# has no route out: TOKENPIN_YKMAN_VENV (default .build/ykman-venv, reused while it holds the same version), the
# version in TOKENPIN_YKMAN_VERSION. pyscard builds from source there: Debian's python3-venv, python3-dev, gcc and
# libpcsclite-dev (the Makefile's TEST_PACKAGES). When pip itself fails (no index reachable), every check is
# skipped with pip's own words.
#
# Then, inside Simulator/pcscd-sandbox --yubikey-reader (the card in a reader named as a YubiKey's CCID interface
# is over USB, from which ykman takes the USB interfaces, as with a real key), it checks:
#   ykman --reader … info: device type, the profile's firmware 5.4.3, its serial in decimal, form factor, the
#   applications enabled (OTP, PIV, OpenPGP) and those not there (FIDO, OATH);
#   ykman otp info (both slots empty), ykman openpgp info (application version, tries), ykman piv info;
#   ykman piv keys generate (P-256 in 9A with the default management key) and the key yubico-piv-tool then reads;
#   ykman piv access change-pin, the new PIN verified by yubico-piv-tool;
#   gpg shows the serial ykman shows (a YubiKey's OpenPGP AID carries it in BCD).
# The last line is "N passed, N failed[, N skipped]"; the exit status is non-zero when anything failed.
#
# Usage: sudo Simulator/Tests/EndToEnd/ykman-clients.sh   (needs pcscd, vsmartcard-vpcd, opensc, yubico-piv-tool,
#        gnupg, scdaemon, python3-venv, python3-dev, gcc, libpcsclite-dev; PyPI for the first run)

set -uo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_dir=$(cd "$script_dir/../../.." && pwd)
ykman_version=${TOKENPIN_YKMAN_VERSION:-5.9.2}
venv=${TOKENPIN_YKMAN_VENV:-$repo_dir/.build/ykman-venv}

if [[ "${TOKENPIN_SANDBOX:-}" != 1 ]]; then
    # Outside the sandbox, where PyPI is reachable: the venv with ykman, unless it is there already.
    if [[ "$("$venv/bin/ykman" --version 2>/dev/null)" != *"version: $ykman_version" ]]; then
        python=$(command -v /usr/bin/python3 python3 | head -1)
        log=$(mktemp /tmp/tokenpin-ykman-pip.XXXXXX)
        rm -rf "$venv"
        if ! { "$python" -m venv "$venv" && "$venv/bin/pip" install --quiet --disable-pip-version-check \
            "yubikey-manager==$ykman_version"; } >"$log" 2>&1; then
            echo "skip - pip could not install yubikey-manager $ykman_version into $venv; its words:"
            sed 's/^/    # /' "$log" | tail -15
            rm -f "$log"
            echo "0 passed, 0 failed, 1 skipped"
            exit 0
        fi
        rm -f "$log"
    fi
    export TOKENPIN_YKMAN_VENV=$venv
    exec "$script_dir/../../pcscd-sandbox" --yubikey-reader -- "$0" "$@"
fi

suite=ykman-clients
. "$script_dir/client-lib.sh"
suite_cleanup() { GNUPGHOME=$work/gnupg gpgconf --kill all 2>/dev/null; }
# The card sits in the YubiKey reader, with a serial of eight decimal digits (23456789) as YubiKeys have.
port=$TOKENPIN_YUBIKEY_PORT
reader=$TOKENPIN_YUBIKEY_READER
serial=0165EC15
decimal_serial=$((16#$serial))

# ykman kills every scdaemon on the machine (pkill -9) when it cannot connect to a card: nothing here may hold the
# card while ykman runs, so gpg comes last and is stopped before the script ends.
export HOME=$work   # ykman keeps a device history under ~/.local/share
ykman() { "$TOKENPIN_YKMAN_VENV/bin/ykman" --reader "$reader" "$@" 2>&1; }
ykpiv() { yubico-piv-tool --reader "$reader" "$@" 2>&1; }

if insert_card --reset --profile yubikey5; then pass "tokenpin-sim inserted a YubiKey 5 into '$reader'"; else
    fail "tokenpin-sim inserted a YubiKey 5 into '$reader'" "$(cat "$work/tokenpin-sim.log")"
fi

out=$(ykman info)
check "ykman info names the device a YubiKey 5 NFC" "$out" "^Device type: YubiKey 5 NFC$"
check "ykman info shows the profile's firmware 5.4.3" "$out" "^Firmware version: 5\.4\.3$"
check "ykman info shows the serial in decimal ($decimal_serial)" "$out" "^Serial number: $decimal_serial$"
check "ykman info shows the form factor" "$out" "^Form factor: Keychain \(USB-A\)$"
check "ykman info shows PIV enabled over USB and NFC" "$out" "^PIV[[:space:]]+Enabled[[:space:]]+Enabled"
check "ykman info shows OpenPGP enabled" "$out" "^OpenPGP[[:space:]]+Enabled[[:space:]]+Enabled"
check "ykman info shows OATH, which the simulated key lacks, disabled" "$out" "^OATH[[:space:]]+Disabled[[:space:]]+Disabled"
check "ykman info shows FIDO2, which the simulated key lacks, disabled" "$out" "^FIDO2[[:space:]]+Disabled[[:space:]]+Disabled"

out=$(ykman otp info)
check "ykman otp info: both OTP slots empty" "$out" "^Slot 1: empty"
out=$(ykman openpgp info)
check "ykman openpgp info shows the application version" "$out" "^Application version: +5\.4\.3$"
check "ykman openpgp info shows the PIN tries" "$out" "^PIN tries remaining: +3$"
out=$(ykman piv info)
check "ykman piv info shows the PIV version" "$out" "^PIV version: +5\.4\.3$"
check "ykman piv info shows 3 of 3 PIN tries" "$out" "^PIN tries remaining: +3/3$"
check "ykman piv info shows the 3DES management key" "$out" "^Management key algorithm: +TDES$"

default_key=010203040506070801020304050607080102030405060708
out=$(ykman piv keys generate --algorithm ECCP256 --management-key "$default_key" 9a "$work/9a.pem")
check "ykman piv keys generate makes a P-256 key in 9A" "$(cat "$work/9a.pem" 2>/dev/null)$out" "BEGIN PUBLIC KEY"
out=$(ykman piv info)
check "ykman piv info lists the key in 9A" "$out" "Slot 9A|9A \(AUTHENTICATION\)|AUTHENTICATION"
out=$(ykman piv keys export 9a "$work/9a-export.pem"; diff "$work/9a.pem" "$work/9a-export.pem" && echo same)
check "ykman piv keys export reads back the public key it generated (GET METADATA)" "$out" "^same$"

out=$(ykman piv access change-pin --pin 123456 --new-pin 24681357)
check "ykman piv access change-pin sets a new PIN" "$out" "New PIN set"
out=$(ykpiv -a verify-pin -P 24681357)
check "yubico-piv-tool verifies the PIN ykman set" "$out" "Successfully verified PIN"
out=$(ykman piv info)
check "the PIN tries are 3/3 after the change" "$out" "^PIN tries remaining: +3/3$"

# gpg last (see above): the serial in the OpenPGP AID is the YubiKey's decimal serial in BCD.
source "$script_dir/gpg-card.sh"
gpg_card_setup "$work/gnupg" "$reader"
out=$(gpg --card-status 2>&1)
check "gpg --card-status shows the serial ykman shows" "$out" "^Serial number \.\.\.\.: $decimal_serial$"
gpgconf --kill all

finish
