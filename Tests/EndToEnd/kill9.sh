#!/usr/bin/env bash
# kill -9 of tokenpind in the middle of verifications: after a restart every record loads and every counter
# accounts for every attempt a client saw answered (never a free guess), at most one more per user (the one in
# flight, counted before its key derivation).
. "$(dirname "$0")/lib.sh"

printf 'kdf-memory-mib = 32\nkdf-passes = 2\nretries-max = 100\n' > "$CONFIG"
start_daemon || exit 1
WRONG=(w1 w2 w3 w4)
RIGHT=(r1 r2 r3)
for user in "${WRONG[@]}" "${RIGHT[@]}"; do
    client --user "$user" enrol < <(printf '482916\n482916\n') >/dev/null || not_ok "enrol $user"
done

hammer() {  # hammer USER PIN: verifications until the daemon is gone; one exit code per line
    local user=$1 pin=$2
    for _ in $(seq 40); do
        client --user "$user" verify <<<"$pin" >/dev/null 2>&1
        local code=$?
        echo "$code"
        [ "$code" = 69 ] && break
    done > "$WORK/codes-$user"
}

for round in 1 2 3; do
    declare -A before=()
    for user in "${WRONG[@]}"; do before[$user]=$(client --user "$user" status | json_field remaining); done
    pids=()
    for user in "${WRONG[@]}"; do hammer "$user" 000000 & pids+=($!); done
    for user in "${RIGHT[@]}"; do hammer "$user" 482916 & pids+=($!); done
    sleep "0.$((RANDOM % 5 + 4))"
    kill -9 "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null; DAEMON_PID=
    for pid in "${pids[@]}"; do wait "$pid"; done
    rm -f "$SOCKET"
    start_daemon || exit 1
    for user in "${WRONG[@]}"; do
        status=$(client --user "$user" status)
        remaining=$(echo "$status" | json_field remaining)
        failures=$(echo "$status" | json_field failures)
        answered=$(grep -c '^1$' "$WORK/codes-$user")
        used=$((before[$user] - remaining))
        check "round $round $user: record loads, every answered wrong PIN counted ($answered <= $used <= $answered+1)" \
            [ "$used" -ge "$answered" ] && [ "$used" -le $((answered + 1)) ]
        check "round $round $user: failures match the counter" [ "$failures" = $((100 - remaining)) ]
    done
    for user in "${RIGHT[@]}"; do
        remaining=$(client --user "$user" status | json_field remaining)
        check "round $round $user: at most the in-flight attempt is outstanding ($remaining)" [ "$remaining" -ge 99 ]
        expect_code "round $round $user: the right PIN restores the counter" 0 client --user "$user" verify <<<482916
        check "round $round $user: counter full" [ "$(client --user "$user" status | json_field remaining)" = 100 ]
    done
done
finish
