#!/usr/bin/env bash
# OpenSSL's libcrypto is loaded the first time a card algorithm needs it (Sources/C/COpenSSL/libcrypto.c), not
# when a process starts: no binary names it as a needed library, and in a private mount namespace where
# libcrypto.so.3 cannot be loaded (/dev/null bound over it) everything but the card algorithms still works, while
# the first card algorithm ends the process with exit 127 and a message naming the library, having lost nothing.
# Root only (unshare -m); the token paths that do load libcrypto run in token-algorithms.sh and piv-token.sh.
. "$(dirname "$0")/lib.sh"

loaded_on_first_use libcrypto.so.3 libcrypto
expect_code "tokenpin --version runs without libcrypto" 0 without_library "$TOKENPIN" --version
expect_code "tokenpind --version runs without libcrypto" 0 without_library "$TOKENPIND" --version
expect_code "a PIN enrols without libcrypto" 0 tp enrol --pin-stdin < <(printf '482916\n482916\n')
expect_code "and verifies without libcrypto" 0 tp verify --pin-stdin < <(printf '482916\n')

# A PIV card's P-256 key made on the in-process simulated card: the first call into libcrypto (in tokenpin-bench,
# which tokenpin runs for --reader sim, and which loads libcrypto the same way).
export TOKENPIN_SIM_PROFILE=piv-card
expect_code "the first card algorithm ends the process with exit 127" 127 \
    tp --reader sim toggle token on --app piv --generate-key --yes --pin-stdin \
    < <(printf '482916\n123456\n010203040506070801020304050607080102030405060708\n')
check "... naming the library and the function it could not call" \
    grep -qE "^tokenpin(-bench)?: cannot call [A-Za-z0-9_]+: OpenSSL's libcrypto.so.3, which the card's algorithms need, cannot be loaded: " "$WORK/err"
unset TOKENPIN_SIM_PROFILE
expect_code "tokenpin status reads the record" 0 tp status
check "... the token still disabled, every PIN try left" \
    bash -c "grep -q '^Type: *token disabled' '$WORK/out' && grep -q '^Tries left: *5 of 5' '$WORK/out'"
expect_code "the PIN still verifies" 0 tp verify --pin-stdin < <(printf '482916\n')

finish
