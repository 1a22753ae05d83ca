#!/usr/bin/env bash
# Fuzzes every parser that reads input someone else controls, for FUZZ_SECONDS each (default 10):
#   json       the JSON parser: the daemon's grammar (a local user's socket lines) and the records'
#   pam        the PAM module's flat parser (C, AddressSanitizer and UBSan)
#   apdu       the APDU layer: BER-TLV, command and response APDUs, historical bytes
#   record     the record decoder and its structural check (records on disk and `tokenpin import`)
#   config     the configuration parser (drop-ins and the user's own file)
#   simulator  the simulator's command processing (a hostile client's APDUs)
#   openpgp    the client's parsing of OpenPGP card answers, alone and through an OpenPGPSession (a hostile card)
#   piv        the client's parsing of PIV card answers: CHUID, discovery, GET VERSION/SERIAL/METADATA, GENERAL
#              AUTHENTICATE templates and chained (61xx) answers, alone and through a PIVSession and PIVCard
#   certificate  the X.509 certificates read from a PIV slot (the key, the subject, the certificate object)
#   pkcs11     tokenpin's reading of its PKCS#11 helper's replies (the framing and every reply; a hostile module)
#   age        age-plugin-tokenpin's reading of the age plugin protocol (stanzas, identities, X25519 stanzas)
#   readers    what pcscd hands the PC/SC layer: the reader multi-string and a card's ATR
# Swift targets link modules built here from every *.swift under their source folders (so files added or renamed
# there are picked up) with -sanitize=fuzzer,address. Seeds are real: protocol lines, a record that `tokenpin enrol`
# wrote, the example configuration, and the commands and answers of sessions with the simulated card.
# Before fuzzing, each target replays its regression inputs (regressions/TARGET/* beside this script). A crash
# listed in regressions/KNOWN (code owned elsewhere, not fixed yet) is reported as a TODO line, not hidden.
#
#   FUZZ_SECONDS=N       seconds per target (default 10)
#   FUZZ_OPTIMIZE=FLAG   the Swift optimisation level of the builds (default -O; make test's smoke run takes -Onone,
#                        which builds in a third of the time and still replays every regression under the sanitizers)
#   FUZZ_TARGETS="a b"   the targets to run (default: all of the above)
#   FUZZ_DIR=DIR         keep builds, corpora and logs in DIR (default: this run's temporary directory)
. "$(dirname "$0")/../EndToEnd/lib.sh"
SECONDS_EACH=${FUZZ_SECONDS:-10}
TARGETS=${FUZZ_TARGETS:-json pam apdu record config simulator openpgp piv certificate pkcs11 age readers}
OUT=${FUZZ_DIR:-$WORK/fuzz}
HARNESS=$ROOT/Tests/Fuzz
REGRESSIONS=$HARNESS/regressions
mkdir -p "$OUT/lib" "$OUT/seeds"
wanted() { [[ " $TARGETS " == *" $1 "* ]]; }

# --- Building ----------------------------------------------------------------------------------------------------
# p11-kit's headers, for CP11Kit (TokenpinPKCS11's C module).
P11KIT_CFLAGS=()
for flag in $(pkg-config --cflags p11-kit-1 2>/dev/null); do P11KIT_CFLAGS+=(-Xcc "$flag"); done
SWIFTC=(swiftc -sanitize=fuzzer,address -parse-as-library -package-name tokenpin "${FUZZ_OPTIMIZE:--O}" -swift-version 6 -enable-upcoming-feature ExistentialAny
    -enable-upcoming-feature MemberImportVisibility -I "$OUT/lib" -I "$OUT/lib/CTokenpinShims" -I "$ROOT/Sources/C/CSodium"
    -I "$OUT/lib/COpenSSL" -I "$OUT/lib/CP11Kit" -L "$OUT/lib"
    "${P11KIT_CFLAGS[@]}" -use-ld=lld)
declare -A BUILT=()
# libcrypto's and p11-kit's headers as the COpenSSL and CP11Kit modules. The fuzz targets link libcrypto and p11-kit
# themselves (-lcrypto, -lp11-kit below) rather than Sources/C/COpenSSL/libcrypto.c and Sources/C/CP11Kit/libp11kit.c,
# the loaders the package's binaries use to load them only when first needed.
mkdir -p "$OUT/lib/COpenSSL" "$OUT/lib/CP11Kit"
printf 'module COpenSSL {\n    header "%s"\n    export *\n}\n' \
    "$ROOT/Sources/C/COpenSSL/include/COpenSSL.h" > "$OUT/lib/COpenSSL/module.modulemap"
printf 'module CP11Kit {\n    header "%s"\n    export *\n}\n' \
    "$ROOT/Sources/C/CP11Kit/include/CP11Kit.h" > "$OUT/lib/CP11Kit/module.modulemap"

# module NAME FOLDER [FLAGS...]: a static library with its module interface, from every Swift file under FOLDER.
module() {
    local name=$1 files
    [ -n "${BUILT[$name]:-}" ] && return "${BUILT[$name]}"
    mapfile -t files < <(find "$ROOT/$2" -name '*.swift' | sort)
    local started=$SECONDS
    "${SWIFTC[@]}" "${@:3}" -module-name "$name" -emit-module -emit-module-path "$OUT/lib/$name.swiftmodule" \
        -emit-library -static -o "$OUT/lib/lib$name.a" "${files[@]}" >"$OUT/build-$name.log" 2>&1
    BUILT[$name]=$?
    echo "# built $name in $((SECONDS - started)) s"
    [ "${BUILT[$name]}" = 0 ] || not_ok "build the $name module for fuzzing: $(grep -m2 'error:' "$OUT/build-$name.log")"
    return "${BUILT[$name]}"
}
# TokenpinSystem imports the shims (close-from for posix_spawn, the parent-death signal).
system() { shims && module TokenpinSystem Sources/System; }
# shims: the C helpers the core imports (CTokenpinShims), as a static library with a module map.
shims() {
    [ -n "${BUILT[CTokenpinShims]:-}" ] && return "${BUILT[CTokenpinShims]}"
    mkdir -p "$OUT/lib/CTokenpinShims"
    printf 'module CTokenpinShims {\n    header "%s"\n    export *\n}\n' \
        "$ROOT/Sources/C/CTokenpinShims/include/CTokenpinShims.h" > "$OUT/lib/CTokenpinShims/module.modulemap"
    clang -O1 -fsanitize=address -c -o "$OUT/lib/shims.o" "$ROOT/Sources/C/CTokenpinShims/shims.c" \
        -I "$ROOT/Sources/C/CTokenpinShims/include" >"$OUT/build-shims.log" 2>&1 \
        && ar rcs "$OUT/lib/libCTokenpinShims.a" "$OUT/lib/shims.o" >>"$OUT/build-shims.log" 2>&1
    BUILT[CTokenpinShims]=$?
    [ "${BUILT[CTokenpinShims]}" = 0 ] || not_ok "build the C shims for fuzzing: $(head -2 "$OUT/build-shims.log")"
    return "${BUILT[CTokenpinShims]}"
}
core() { system && shims && module TokenpinCore Sources/Core; }
# The APDU layer keeps secrets in the core's guarded memory (ISO7816Transport.sendSensitive).
apdu() { core && module TokenpinAPDU Sources/Cards/APDU; }
cardcrypto() { core && module TokenpinCardCrypto Sources/Cards/Crypto; }
openpgp() { core && apdu && cardcrypto && module TokenpinOpenPGP Sources/Cards/OpenPGP; }
simulator() { core && apdu && cardcrypto && module TokenpinSimulator Simulator/Sources/TokenpinSimulator; }
piv() { core && apdu && cardcrypto && module TokenpinPIV Sources/Cards/PIV; }
# The helper's wire is internal to TokenpinPKCS11: its target imports it @testable.
pkcs11() { core && cardcrypto && module TokenpinPKCS11 Sources/Cards/PKCS11 -enable-testing; }
agemodule() { core && cardcrypto && module TokenpinAge Sources/Age; }

# link NAME SWIFT-FILES... -- LIBRARIES...: builds the fuzz target NAME.
link() {
    local name=$1 files=() libraries=()
    shift
    while [ $# -gt 0 ] && [ "$1" != -- ]; do files+=("$HARNESS/$1"); shift; done
    shift
    for library in "$@"; do
        libraries+=("-l$library")
        [ "$library" = TokenpinCore ] && libraries+=("-lTokenpinSystem" "-lCTokenpinShims")  # the core's own dependencies
        # The card algorithms (libcrypto) under the OpenPGP session and the simulator.
        [[ "$library" = TokenpinOpenPGP || "$library" = TokenpinSimulator || "$library" = TokenpinPIV \
            || "$library" = TokenpinPKCS11 || "$library" = TokenpinAge ]] \
            && libraries+=("-lTokenpinCardCrypto")
    done
    "${SWIFTC[@]}" -o "$OUT/fuzz-$name" "${files[@]}" "${libraries[@]}" -lsodium -lcrypto >"$OUT/build-$name.log" 2>&1 \
        || { not_ok "build the $name fuzz target: $(grep -m2 'error' "$OUT/build-$name.log")"; return 1; }
}

# --- Running -----------------------------------------------------------------------------------------------------
# known TARGET LOG: the KNOWN line whose pattern the crash in LOG matches, if any.
known() {
    local target=$1 log=$2 name pattern
    [ -f "$REGRESSIONS/KNOWN" ] || return 1
    while read -r name pattern; do
        [ "$name" = "$target" ] && [ -n "$pattern" ] && grep -qE -- "$pattern" "$log" && { echo "$pattern"; return 0; }
    done < <(grep -v '^#' "$REGRESSIONS/KNOWN")
    return 1
}

# verdict TARGET LOG WHAT CODE: reports a finished run; a crash matching KNOWN is a TODO, anything else a failure.
verdict() {
    local target=$1 log=$2 what=$3 code=$4 pattern
    if [ "$code" = 0 ]; then ok "$what"; return; fi
    if pattern=$(known "$target" "$log"); then
        ok "$what # TODO known crash, reported, not fixed yet: $pattern"
    else
        not_ok "$what: crash: $(grep -m1 -E 'ERROR|Fatal error|precondition|[Tt]imeout' "$log") (log: $log)"
    fi
}

# fuzz TARGET MAX-LEN SEED-DIRS...: replays the regressions, then fuzzes for SECONDS_EACH from the seeds.
fuzz() {
    local target=$1 max_len=$2 binary=$OUT/fuzz-$1 corpus=$OUT/corpus/$1
    shift 2
    mkdir -p "$corpus" "$OUT/crashes/$target"
    for seeds in "$@"; do cp -r "$seeds/." "$corpus/" 2>/dev/null; done
    if [ -d "$REGRESSIONS/$target" ] && [ -n "$(ls -A "$REGRESSIONS/$target")" ]; then
        for input in "$REGRESSIONS/$target"/*; do
            SWIFT_BACKTRACE=enable=no "$binary" "$input" >"$OUT/$target-regression.log" 2>&1
            local replayed=$?
            verdict "$target" "$OUT/$target-regression.log" "$target replays regression ${input##*/}" "$replayed"
        done
    fi
    SWIFT_BACKTRACE=enable=no "$binary" -max_total_time="$SECONDS_EACH" -max_len="$max_len" -timeout=10 \
        -print_final_stats=1 -artifact_prefix="$OUT/crashes/$target/" "$corpus" >"$OUT/$target.log" 2>&1
    local code=$?
    local runs
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$OUT/$target.log")
    verdict "$target" "$OUT/$target.log" "fuzz $target for ${SECONDS_EACH}s: ${runs:-?} executions" "$code"
}

# --- Seeds -------------------------------------------------------------------------------------------------------
# Protocol lines (json, pam): what a client and the daemon send.
mkdir -p "$OUT/seeds/lines"
i=0
for line in '{"v":1,"type":"request","op":"verify","user":"alice"}' \
    '{"v":1,"type":"secret","prompt":"pin","value":"48\"29\\u00e9\n16"}' \
    '{"v":1,"type":"result","exitCode":1,"outcome":"rejected","triesLeft":4,"lastTry":false,"lockedAt":null}' \
    '{"v":1,"type":"error","code":"not-enrolled","message":"no PIN","exitCode":4}' \
    '{"v":1,"type":"prompt","prompt":"card-pin","card":"0006 1234","triesLeft":3}' '[1,[2,{"a":-9}]]'; do
    printf '%s' "$line" > "$OUT/seeds/lines/$i"; i=$((i + 1))
done
# Card answers and commands for the APDU layer.
mkdir -p "$OUT/seeds/apdu"
printf '\x6e\x81\x05\x4f\x03\xd2\x76\x00' > "$OUT/seeds/apdu/tlv"
printf '\x00\x2a\x80\x86\x27\xa6\x25\x7f\x49\x22\x86\x20%s\x00' "$(head -c 32 /dev/zero | tr '\0' 'A')" \
    > "$OUT/seeds/apdu/pso"
printf '\x00\xca\x00\x6e\x00\x00\x00' > "$OUT/seeds/apdu/extended"
printf '\x80\x73\x00\x00\xe0\x05\x90\x00' > "$OUT/seeds/apdu/historical"
# A record as `tokenpin enrol` writes it (with the built CLI), beside the checked-in ones (PIN only, with a token).
mkdir -p "$OUT/seeds/record"
if [ -x "$BIN/tokenpin" ]; then
    mkdir -m 0700 "$WORK/record-store"
    printf 'kdf-memory-mib = 8\nkdf-passes = 1\n' > "$WORK/record.conf"
    "$BIN/tokenpin" --local --store "$WORK/record-store" --config "$WORK/record.conf" enrol --pin-stdin \
        < <(printf '482916\n482916\n') >/dev/null 2>&1
    cp "$WORK/record-store/"*.json "$OUT/seeds/record/" 2>/dev/null
fi
# The example configuration as shipped and with every setting uncommented.
mkdir -p "$OUT/seeds/config"
cp "$ROOT/config/tokenpin.conf.example" "$OUT/seeds/config/example.conf"
sed -E 's/^#([a-z-]+ = )/\1/' "$ROOT/config/tokenpin.conf.example" > "$OUT/seeds/config/example-set.conf"

# --- The targets -------------------------------------------------------------------------------------------------
if wanted json; then
    if "${SWIFTC[@]}" -o "$OUT/fuzz-json" "$ROOT/Sources/Core/JSON/"*.swift \
        "$HARNESS/json_parser.swift" >"$OUT/build-json.log" 2>&1; then
        fuzz json 4096 "$OUT/seeds/lines"
    else
        not_ok "build the json fuzz target: $(grep -m2 'error' "$OUT/build-json.log")"
    fi
fi
if wanted pam; then
    if clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -fuse-ld=lld -Wno-unused-function \
        -o "$OUT/fuzz-pam" "$HARNESS/pam_parser.c" -lpam >"$OUT/build-pam.log" 2>&1; then
        fuzz pam 4096 "$OUT/seeds/lines"
    else
        not_ok "build the pam fuzz target: $(head -3 "$OUT/build-pam.log")"
    fi
fi
if wanted apdu && core; then
    mapfile -t APDU_FILES < <(find "$ROOT/Sources/Cards/APDU" -name '*.swift' | sort)
    if "${SWIFTC[@]}" -o "$OUT/fuzz-apdu" "${APDU_FILES[@]}" "$HARNESS/apdu_parsers.swift" \
        -lTokenpinCore -lTokenpinSystem -lCTokenpinShims -lsodium >"$OUT/build-apdu.log" 2>&1
    then
        fuzz apdu 4096 "$OUT/seeds/apdu"
    else
        not_ok "build the apdu fuzz target: $(grep -m2 'error' "$OUT/build-apdu.log")"
    fi
fi
if wanted record && core && link record record_decoder.swift -- TokenpinCore; then
    fuzz record 8192 "$HARNESS/seeds/record" "$OUT/seeds/record"
fi
if wanted config && core && link config config_parser.swift -- TokenpinCore; then
    fuzz config 4096 "$HARNESS/seeds/config" "$OUT/seeds/config"
fi
# Sessions with the simulated card give both the simulator's commands and the client's answers.
if { wanted simulator || wanted openpgp; } && openpgp && simulator \
    && link seed-transcript seed_transcript.swift seed_support.swift -- TokenpinOpenPGP TokenpinSimulator TokenpinCore \
        TokenpinAPDU; then
    mkdir -p "$OUT/seeds/transcript"
    : > "$OUT/seeds/empty"
    TOKENPIN_SEED_DIR=$OUT/seeds/transcript SWIFT_BACKTRACE=enable=no "$OUT/fuzz-seed-transcript" "$OUT/seeds/empty" \
        >"$OUT/seed-transcript.log" 2>&1
    check "seed sessions with the simulated card run" test -s "$OUT/seeds/transcript/answers-generate-decipher"
    mkdir -p "$OUT/seeds/commands" "$OUT/seeds/answers"
    cp "$OUT/seeds/transcript/commands-"* "$OUT/seeds/commands/" 2>/dev/null
    cp "$OUT/seeds/transcript/answers-"* "$OUT/seeds/answers/" 2>/dev/null
    if wanted simulator && link simulator simulator_commands.swift chunks.swift -- TokenpinSimulator TokenpinCore TokenpinAPDU
    then
        fuzz simulator 8192 "$OUT/seeds/commands"
    fi
    if wanted openpgp \
        && link openpgp openpgp_responses.swift chunks.swift fuzzed_card.swift -- TokenpinOpenPGP TokenpinCore TokenpinAPDU
    then
        fuzz openpgp 8192 "$OUT/seeds/answers"
    fi
fi
# PIV sessions with the simulated card (a YubiKey, a PIV card) give the piv target's seeds; openssl's certificates
# (P-256, P-384, RSA 2048) the certificate target's.
if { wanted piv || wanted certificate; } && piv && simulator \
    && link piv-seed-transcript piv_seed_transcript.swift seed_support.swift -- TokenpinPIV TokenpinSimulator \
        TokenpinCore TokenpinAPDU; then
    mkdir -p "$OUT/seeds/piv" "$OUT/seeds/certificates"
    : > "$OUT/seeds/empty"
    TOKENPIN_SEED_DIR=$OUT/seeds/piv SWIFT_BACKTRACE=enable=no "$OUT/fuzz-piv-seed-transcript" "$OUT/seeds/empty" \
        >"$OUT/piv-seed-transcript.log" 2>&1
    check "seed PIV sessions with the simulated card run" test -s "$OUT/seeds/piv/answers-piv-card-rsa"
    for key in "ec -pkeyopt ec_paramgen_curve:P-256" "ec -pkeyopt ec_paramgen_curve:P-384" "rsa:2048"; do
        # shellcheck disable=SC2086 # the key's words are openssl's arguments
        openssl req -x509 -newkey $key -nodes -keyout /dev/null -subj "/CN=tokenpin fuzz seed" -days 1 -outform DER \
            -out "$OUT/seeds/certificates/${key##*[:-]}.der" >/dev/null 2>&1
    done
    if wanted piv && link piv piv_responses.swift chunks.swift fuzzed_card.swift -- TokenpinPIV TokenpinCore TokenpinAPDU
    then
        fuzz piv 8192 "$OUT/seeds/piv"
    fi
    if wanted certificate && link certificate certificate_parser.swift fuzzed_card.swift -- TokenpinPIV TokenpinCore \
        TokenpinAPDU
    then
        fuzz certificate 8192 "$OUT/seeds/certificates"
    fi
fi
# The PKCS#11 helper's replies, seeded by every kind of reply as the helper sends it (the target writes them).
if wanted pkcs11 && pkcs11 \
    && link pkcs11 pkcs11_replies.swift -- TokenpinPKCS11 TokenpinCardCrypto TokenpinCore p11-kit; then
    mkdir -p "$OUT/seeds/pkcs11"
    : > "$OUT/seeds/empty"
    TOKENPIN_SEED_DIR=$OUT/seeds/pkcs11 SWIFT_BACKTRACE=enable=no "$OUT/fuzz-pkcs11" "$OUT/seeds/empty" \
        >"$OUT/pkcs11-seeds.log" 2>&1
    check "seed replies of the PKCS#11 helper are written" test -s "$OUT/seeds/pkcs11/inventory"
    fuzz pkcs11 16384 "$OUT/seeds/pkcs11"
fi
# The age plugin protocol, seeded by a session as age 1.1.1 sends it (with its answers) and by malformed ones. The
# identity names the recipient of the target's fixed secret (42 × 32, c2sp.org/age's example), and the first
# X25519 stanza is age's for it, so the unwrap and the file-key answer are reached.
if wanted age && agemodule && link age age_plugin.swift -- TokenpinAge TokenpinCore; then
    mkdir -p "$OUT/seeds/age"
    identity=AGE-PLUGIN-TOKENPIN-1QYFJC3PTUQG0H4T7WFSRX292WMN3LNXP2QA2UGVNYLG5M8YEJ068YEN40FAQ5S2CPH
    printf -- '-> add-identity %s\n\n-> grease-1 a b\nAAAA\n-> recipient-stanza 0 X25519 67zj72X1c/FAuS3tZQJ7zkxjyIzR1EOchzghllKbBRc\nhrVCjqZebmL7nhYHbXzsH/HIkumz6yM4N4bNgADsPng\n-> recipient-stanza 0 X25519 qAIgTZC28X99HhH/FBcE4JDA64K/Ixu9VrQ4sYx6tSI\ny2JEtmn05bKQiFO1AUChwU2KlxTrWv4IDAkOSCPjNUc\n-> recipient-stanza 1 scrypt c2FsdA 18\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n-> done\n\n-> ok\n\n-> ok\n\n' \
        "$identity" >"$OUT/seeds/age/session"
    printf '%s\n-> done\n\n' "$identity" >"$OUT/seeds/age/identity-line"
    printf -- '-> add-identity AGE-PLUGIN-YUBIKEY-1QQQQ\n\n-> recipient-stanza 0 X25519 AAAA\nAA\n-> done\n\n' \
        >"$OUT/seeds/age/malformed"
    fuzz age 8192 "$OUT/seeds/age"
fi
# The PC/SC layer's parsers of pcscd's answers, built from their two files over the APDU module (no pcsc-lite).
if wanted readers && apdu; then
    if "${SWIFTC[@]}" -o "$OUT/fuzz-readers" "$ROOT/Sources/Cards/PCSC/ReaderList.swift" \
        "$ROOT/Sources/Cards/PCSC/ATR.swift" "$HARNESS/reader_list.swift" -lTokenpinAPDU -lTokenpinCore \
        -lTokenpinSystem -lCTokenpinShims -lsodium >"$OUT/build-readers.log" 2>&1
    then
        fuzz readers 4096 "$HARNESS/seeds/readers"
    else
        not_ok "build the readers fuzz target: $(grep -m2 'error' "$OUT/build-readers.log")"
    fi
fi
finish
