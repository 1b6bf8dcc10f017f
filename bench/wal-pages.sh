#!/bin/bash
# What an add writes for the listing index: WAL frames (pages) per add,
# through the real daemon and expensectl, against the same daemon on a
# copy of the same database with the listing's triggers dropped (the
# baseline: an add as it was before the index). Sequential adds from one
# client, so each is its own commit; the WAL's growth over N adds, in
# frames, divided by N. Nothing checkpoints meanwhile (the store's
# wal_autocheckpoint is 4,000 frames; N stays well below). Then the
# same frames by the table or index their page belongs to (dbstat).
#
#   bench/wal-pages.sh [BIN_DIR] [N]     # default .build/release, 300
set -euo pipefail
shopt -s inherit_errexit  # a failure inside $(…) stops the script too
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
for t in $(sqlite3 "$D/without/expensed.db" "SELECT name FROM sqlite_schema WHERE type = 'trigger' AND name LIKE 'listing%'"); do
    sqlite3 "$D/without/expensed.db" "DROP TRIGGER $t"
done

measure() {  # state directory: frames per add; leaves the WAL and the page map in DIR.wal, DIR.pages
    local pid before after
    pid=$(start "$1" "$1.sock")
    "$BIN/expensectl" --socket "$1.sock" add --merchant Warmup --amount 1 --currency EUR --date 2026-01-01 > /dev/null
    before=$(frames "$1")
    for i in $(seq "$N"); do
        "$BIN/expensectl" --socket "$1.sock" add --merchant "Merchant $((i % 50))" --amount "$i.25" --currency EUR \
            --date "$(printf "2026-03-%02d" $(( 1 + i % 28 )))" --category Meals > /dev/null
    done
    after=$(frames "$1")
    # Which b-tree each page is (SQLite's dbstat), read while the WAL is still there.
    cp "$1/expensed.db-wal" "$1.wal"
    sqlite3 "$1/expensed.db" 'SELECT pageno, name FROM dbstat' > "$1.pages"
    stop "$pid"
    echo "$before $after"
}

per_add() {  # "before after": frames per add
    set -- $1
    echo "scale=2; ($2 - $1) / $N" | bc
}

# The frames after `before`, by the table or index their page belongs to, per add.
by_btree() {  # state directory, "before after"
    python3 - "$1.wal" "$1.pages" "$(sqlite3 "$1/expensed.db" 'PRAGMA page_size')" $2 "$N" <<'PY'
import collections, struct, sys
wal, pages, size, first, last, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
names = dict((int(p), name) for p, name in (line.rstrip("\n").split("|", 1) for line in open(pages)))
data = open(wal, "rb").read()
counts = collections.Counter()
for frame in range(first, last):
    page, = struct.unpack(">I", data[32 + frame * (24 + size):][:4])
    counts[names.get(page, "page %d" % page)] += 1
print(", ".join("%s %.2f" % (name, count / n) for name, count in counts.most_common()))
PY
}

with=$(measure "$D/with")
without=$(measure "$D/without")
echo "WAL pages per add ($N adds, one commit each): with the listing's triggers $(per_add "$with"), without $(per_add "$without"); ratio $(echo "scale=2; $(per_add "$with") / $(per_add "$without")" | bc)"
echo "  with, by b-tree: $(by_btree "$D/with" "$with")"
echo "  without, by b-tree: $(by_btree "$D/without" "$without")"
