#!/usr/bin/env bash
# p11-kit is loaded the first time a PKCS#11 call needs it (Sources/C/CP11Kit/libp11kit.c), not when a process
# starts, as libcrypto is (libcrypto.sh): no binary names it as a needed library, and in a private mount namespace
# where libp11-kit.so.0 cannot be loaded (/dev/null bound over it) everything but PKCS#11 tokens still works, while
# the first p11-kit call (in tokenpin or in its PKCS#11 helper) ends that process with exit 127 and a message naming
# the library, having lost nothing. Root only (unshare -m); the PKCS#11 paths that do load p11-kit run in
# pam-pkcs11.sh and pkcs11-opensc.sh.
. "$(dirname "$0")/lib.sh"

loaded_on_first_use libp11-kit.so.0 p11-kit
expect_code "tokenpin --version runs without p11-kit" 0 without_library "$TOKENPIN" --version
expect_code "tokenpind --version runs without p11-kit" 0 without_library "$TOKENPIND" --version
expect_code "a PIN enrols without p11-kit" 0 tp enrol --pin-stdin < <(printf '482916\n482916\n')
expect_code "and verifies without p11-kit" 0 tp verify --pin-stdin < <(printf '482916\n')
expect_code "tokenpin status reads the record without p11-kit" 0 tp status

# The helper, where the modules p11-kit is configured to load are loaded (--app pkcs11 without a module): its first
# call into p11-kit ends it with exit 127 and the message, on the standard error it has when run by hand (tokenpin
# gives it /dev/null), and tokenpin says how it ended.
expect_code "tokenpin-pkcs11's first p11-kit call ends it with exit 127" 127 \
    without_library "$BIN/tokenpin-pkcs11" --p11-kit </dev/null
check "... naming the library and the function it could not call" \
    grep -qE "^tokenpin-pkcs11: cannot call p11_kit_modules_load_and_initialize: p11-kit's libp11-kit.so.0, which PKCS#11 tokens need, cannot be loaded: " "$WORK/err"
expect_code "a PKCS#11 key through p11-kit's modules is unavailable (exit 6)" 6 \
    tp toggle token on --app pkcs11 --pin-stdin < <(printf '482916\n123456\n')
check "... the helper's exit 127 said, naming the library" grep -q "the PKCS#11 helper exited with status 127 .*libp11-kit.so.0, is missing" "$WORK/err"

# A module named by its path is loaded without p11-kit, so tokenpin's own parse of the key's URI (before it asks
# the helper) is the first call into p11-kit, and tokenpin ends with exit 127 and the message.
module=/usr/lib/softhsm/libsofthsm2.so
if [ -r "$module" ]; then
    expect_code "tokenpin's first p11-kit call ends it with exit 127" 127 \
        tp toggle token on --pkcs11-module "$module" --token-uri 'pkcs11:token=absent;id=%01' --pin-stdin \
        < <(printf '482916\n123456\n')
    check "... naming the library and the function it could not call" \
        grep -qE "^tokenpin: cannot call p11_kit_[a-z_]+: p11-kit's libp11-kit.so.0, which PKCS#11 tokens need, cannot be loaded: " "$WORK/err"
else
    echo "skipped: tokenpin's own p11-kit call needs SoftHSM's module ($module, make test-deps)"
fi
expect_code "tokenpin status reads the record" 0 tp status
check "... the token still disabled, every PIN try left" \
    bash -c "grep -q '^Type: *token disabled' '$WORK/out' && grep -q '^Tries left: *5 of 5' '$WORK/out'"
expect_code "the PIN still verifies" 0 tp verify --pin-stdin < <(printf '482916\n')

finish
