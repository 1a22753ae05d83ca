#!/usr/bin/env bash
# Reader and card events through `watch`, with a private pcscd (Simulator/pcscd-sandbox, vpcd readers) and the
# simulated card: inserting and pulling the card reaches a watcher as cardInserted / cardRemoved.
. "$(dirname "$0")/lib.sh"

enter_sandbox

start_daemon || exit 1
PORT=${TOKENPIN_VPCD_PORTS%%,*}
client watch >"$WORK/events" 2>"$WORK/watch.err" &
WATCH=$!
for _ in $(seq 50); do grep -q "watching readers" "$WORK/daemon.log" && break; sleep 0.1; done
check "daemon watches the sandbox's readers" grep -q "watching readers" "$WORK/daemon.log"
# An event before the subscription is not shown to the watcher; every one after this line is.
check "the watcher says it is subscribed" wait_for_line "$WORK/watch.err" "Watching tokenpind's events for every user."
"$TOKENPIN_SIM_BIN" --state "$WORK/card.json" --port "$PORT" 2>"$WORK/sim.log" &
SIMPID=$!
for _ in $(seq 50); do grep -q cardInserted "$WORK/events" && break; sleep 0.1; done
kill -TERM "$SIMPID"; wait "$SIMPID" 2>/dev/null
for _ in $(seq 50); do grep -q cardRemoved "$WORK/events" && break; sleep 0.1; done
kill "$WATCH" 2>/dev/null; wait "$WATCH" 2>/dev/null
check "card inserted reaches the watcher" grep -q '"event":"cardInserted",.*"reader":"tokenpin vpcd' "$WORK/events"
check "card removed reaches the watcher" grep -q '"event":"cardRemoved"' "$WORK/events"
finish
