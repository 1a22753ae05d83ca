#!/usr/bin/env bash
# pkcs11-opensc.sh: OpenSC's PKCS#11 module (opensc-pkcs11.so) driven by tokenpin's PKCS#11 layer through a private
# pcscd, vpcd and tokenpin-sim's PIV card: the Swift suite TokenpinPKCS11Tests.OpenSCTests (the 9D key listed with its
# public key and URI as pkcs11-tool and p11tool list them, login with the right and a wrong PIN counted on the card,
# three wrong PINs blocking it (then CKR_PIN_LOCKED),
# ECDH through C_DeriveKey checked against the secret computed from the public key, and the figures: calls per
# verify, bare against through tokenpin-pkcs11, the helper's start).
#
# OpenSC talks to every card pcscd shows, so it gets a pcscd of its own (Simulator/pcscd-sandbox with two vpcd
# ports), never the one the other suites share. Needs root (the sandbox) and a built test bundle
# (`swift build --build-tests`); `make test` runs it after the Swift tests.

set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

if [[ $(id -u) -ne 0 ]]; then
    echo "skip - pkcs11-opensc.sh needs root for its pcscd sandbox"
    exit 0
fi
if [[ "${TOKENPIN_SANDBOX:-}" != 1 ]]; then
    export TOKENPIN_VPCD_READERS=2
    exec Simulator/pcscd-sandbox -- "$0" "$@"
fi

TOKENPIN_PKCS11_OPENSC=1 exec swift test --skip-build --filter 'TokenpinPKCS11Tests\.OpenSCTests'
