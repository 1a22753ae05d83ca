#!/usr/bin/env bash
# Fuzzes the parsers that read hostile input for FUZZ_SECONDS each (default 15): the daemon's JSON parser (Swift),
# the PAM module's flat parser (C, with AddressSanitizer) and the APDU layer (TLV, APDUs, historical bytes).
# Seeds are real protocol lines and card answers.
. "$(dirname "$0")/lib.sh"
SECONDS_EACH=${FUZZ_SECONDS:-15}
mkdir -p "$WORK/seeds"
i=0
for line in '{"v":1,"type":"request","op":"verify","user":"alice"}' \
    '{"v":1,"type":"secret","prompt":"pin","value":"48\"29\\u00e9\n16"}' \
    '{"v":1,"type":"result","exitCode":1,"outcome":"rejected","triesLeft":4,"lastTry":false,"lockedAt":null}' \
    '{"v":1,"type":"error","code":"not-enrolled","message":"no PIN","exitCode":4}' \
    '{"v":1,"type":"prompt","prompt":"card-pin","card":"0006 1234","triesLeft":3}' '[1,[2,{"a":-9}]]'; do
    printf '%s' "$line" > "$WORK/seeds/$i"; i=$((i + 1))
done
run() {  # run NAME BINARY
    local name=$1 binary=$2
    mkdir -p "$WORK/corpus-$name"; cp "$WORK/seeds/"* "$WORK/corpus-$name/"
    SWIFT_BACKTRACE=enable=no "$binary" -max_total_time="$SECONDS_EACH" -max_len=4096 "$WORK/corpus-$name" \
        >"$WORK/$name.log" 2>&1
    local code=$?
    if [ "$code" = 0 ]; then ok "fuzz $name for ${SECONDS_EACH}s: $(grep -o 'Done [0-9]* runs' "$WORK/$name.log")"
    else not_ok "fuzz $name found a crash: $(grep -m1 -E 'ERROR|Fatal|precondition' "$WORK/$name.log")"; fi
}
if swiftc -sanitize=fuzzer,address -parse-as-library -O -o "$WORK/fuzz-json" \
    "$ROOT/Sources/TokenpinProtocol/JSON.swift" "$ROOT/Sources/TokenpinProtocol/ProtocolError.swift" \
    "$ROOT/tests/service/fuzz/json_parser.swift" 2>"$WORK/build-json.log"; then
    run json "$WORK/fuzz-json"
else
    not_ok "build the Swift fuzz target: $(head -3 "$WORK/build-json.log")"
fi
# Card answers and commands as seeds for the APDU layer.
mkdir -p "$WORK/apdu-seeds"
printf '\x6e\x81\x05\x4f\x03\xd2\x76\x00' > "$WORK/apdu-seeds/tlv"
printf '\x00\x2a\x80\x86\x27\xa6\x25\x7f\x49\x22\x86\x20%s\x00' "$(head -c 32 /dev/zero | tr '\0' 'A')" > "$WORK/apdu-seeds/pso"
printf '\x00\xca\x00\x6e\x00\x00\x00' > "$WORK/apdu-seeds/extended"
printf '\x80\x73\x00\x00\xe0\x05\x90\x00' > "$WORK/apdu-seeds/historical"
if swiftc -sanitize=fuzzer,address -parse-as-library -O -o "$WORK/fuzz-apdu" "$ROOT"/Sources/TokenpinAPDU/*.swift \
    "$ROOT/tests/service/fuzz/apdu_parsers.swift" 2>"$WORK/build-apdu.log"; then
    cp "$WORK/apdu-seeds/"* "$WORK/seeds/" 2>/dev/null
    run apdu "$WORK/fuzz-apdu"
else
    not_ok "build the APDU fuzz target: $(head -3 "$WORK/build-apdu.log")"
fi
if clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -fuse-ld=lld -Wno-unused-function \
    -o "$WORK/fuzz-pam" "$ROOT/tests/service/fuzz/pam_parser.c" -lpam 2>"$WORK/build-pam.log"; then
    run pam "$WORK/fuzz-pam"
else
    not_ok "build the C fuzz target: $(head -3 "$WORK/build-pam.log")"
fi
finish
