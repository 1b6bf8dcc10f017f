#!/bin/bash
# What an add writes for the listing index: WAL frames (pages) per add,
# through the real daemon and expensectl, against the same daemon on a
# copy of the same database with the listing's triggers dropped (the
# baseline: an add as it was before the index). Sequential adds from one
# client, so each is its own commit; the WAL's growth over N adds, in
# frames, divided by N. Nothing checkpoints meanwhile (the store's
# wal_autocheckpoint is 4,000 frames; N stays well below).
#
#   bench/wal-pages.sh [BIN_DIR] [N]     # default .build/release, 300
set -euo pipefail
BIN=${1:-.build/release}
N=${2:-300}
D=$(mktemp -d /tmp/wal-pages.XXXX)
trap 'rm -rf "$D"' EXIT

start() {  # state directory, socket; prints the daemon's pid
    : > "$D/expensed.conf"
    "$BIN/expensed" --config "$D/expensed.conf" --state-dir "$1" --socket "$2" --spool-dir none \
        --server none --log-target stderr > /dev/null 2>> "$D/daemon.log" &
    local pid=$!
    for _ in $(seq 200); do "$BIN/expensectl" --socket "$2" status > /dev/null 2>&1 && break; sleep 0.05; done
    echo $pid
}

stop() {  # pid: ends it and waits until it is gone (not this shell's child)
    kill "$1"
    while kill -0 "$1" 2> /dev/null; do sleep 0.05; done
}

frames() {  # the WAL's size in frames (24-byte header and one page each)
    local page size
    page=$(sqlite3 "$1/expensed.db" 'PRAGMA page_size')
    size=$(stat -c %s "$1/expensed.db-wal")
    echo $(( (size - 32) / (page + 24) ))
}

# A schema of today, made by the daemon itself; its copy without triggers.
pid=$(start "$D/with" "$D/with.sock"); stop "$pid"
cp -a "$D/with" "$D/without"
for t in listing_job_insert listing_job_update listing_job_delete listing_expense_insert listing_expense_update listing_expense_delete; do
    sqlite3 "$D/without/expensed.db" "DROP TRIGGER $t"
done

measure() {  # state directory: frames per add
    local pid before after
    pid=$(start "$1" "$1.sock")
    "$BIN/expensectl" --socket "$1.sock" add --merchant Warmup --amount 1 --currency EUR --date 2026-01-01 > /dev/null
    before=$(frames "$1")
    for i in $(seq "$N"); do
        "$BIN/expensectl" --socket "$1.sock" add --merchant "Merchant $((i % 50))" --amount "$i.25" --currency EUR \
            --date "$(printf "2026-03-%02d" $(( 1 + i % 28 )))" --category Meals > /dev/null
    done
    after=$(frames "$1")
    stop "$pid"
    echo "scale=2; ($after - $before) / $N" | bc
}

with=$(measure "$D/with")
without=$(measure "$D/without")
echo "WAL pages per add ($N adds, one commit each): with the listing's triggers $with, without $without; ratio $(echo "scale=2; $with / $without" | bc)"
