#!/usr/bin/env bash
# Fuzzes the two protocol parsers for FUZZ_SECONDS each (default 15): the daemon's JSON parser (Swift) and the
# PAM module's flat parser (C, with AddressSanitizer). Seeds are real protocol lines.
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
if clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -fuse-ld=lld -Wno-unused-function \
    -o "$WORK/fuzz-pam" "$ROOT/tests/service/fuzz/pam_parser.c" -lpam 2>"$WORK/build-pam.log"; then
    run pam "$WORK/fuzz-pam"
else
    not_ok "build the C fuzz target: $(head -3 "$WORK/build-pam.log")"
fi
finish
