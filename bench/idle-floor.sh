#!/bin/bash
# The idle memory below which the daemon cannot go with the libraries it
# needs: a C program that starts each of them as the daemon does
# (libcurl's global and easy init, an SQLite database with a row, one
# SHA-256 through OpenSSL's EVP, one journal line), and a Swift program
# built with -static-stdlib that does nothing, each paused; then the
# installed daemon's own RSS at start, after one add, and after N more.
# RSS and its anonymous part from /proc/PID/smaps_rollup, in KiB.
#
#   bench/idle-floor.sh [BIN_DIR] [N]    # default .build/release, 200
set -euo pipefail
shopt -s inherit_errexit  # a failure inside $(…) stops the script too
BIN=$(realpath "${1:-.build/release}")
N=${2:-200}
D=$(mktemp -d /tmp/idle-floor.XXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done; rm -rf "$D"' EXIT

memory() {  # pid: "RSS KiB, anonymous KiB"
    awk '/^Rss:/ { r = $2 } /^Anonymous:/ { a = $2 } END { printf "%d KiB, anonymous %d KiB", r, a }' "/proc/$1/smaps_rollup"
}

ready() {  # pid, file: waits until the program wrote its line
    for _ in $(seq 200); do [ -s "$2" ] && return 0; kill -0 "$1" || return 1; sleep 0.05; done
    return 1
}

cat > "$D/floor.c" <<'C'
#include <curl/curl.h>
#include <openssl/evp.h>
#include <sqlite3.h>
#include <stdio.h>
#include <systemd/sd-journal.h>
#include <unistd.h>
int main(void) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURL *curl = curl_easy_init();
    sqlite3 *db;
    sqlite3_open(":memory:", &db);
    sqlite3_exec(db, "CREATE TABLE t (a); INSERT INTO t VALUES (1);", 0, 0, 0);
    unsigned char md[32];
    unsigned int length;
    EVP_Digest("x", 1, md, &length, EVP_sha256(), NULL);
    sd_journal_print(LOG_DEBUG, "idle-floor");
    printf("ready\n");
    fflush(stdout);
    pause();
    curl_easy_cleanup(curl);
    return 0;
}
C
printf 'import Glibc\nprint("ready")\nfflush(stdout)\npause()\n' > "$D/floor.swift"
cc -O2 "$D/floor.c" -o "$D/floor-c" -lcurl -lsqlite3 -lsystemd -lcrypto
swiftc -O -static-stdlib "$D/floor.swift" -o "$D/floor-swift" 2> /dev/null

"$D/floor-c" > "$D/c.out" 2> /dev/null &
pids+=($!)
ready $! "$D/c.out"
echo "libraries (C, initialized): $(memory $!)"
"$D/floor-swift" > "$D/s.out" &
pids+=($!)
ready $! "$D/s.out"
echo "static Swift, nothing else: $(memory $!)"

: > "$D/expensed.conf"
"$BIN/expensed" --config "$D/expensed.conf" --state-dir "$D/state" --socket "$D/c.sock" --spool-dir none \
    --server none --reading off --log-target stderr > /dev/null 2> "$D/daemon.log" &
daemon=$!
pids+=($daemon)
for _ in $(seq 200); do "$BIN/expensectl" --socket "$D/c.sock" status > /dev/null 2>&1 && break; sleep 0.05; done
echo "expensed at start: $(memory $daemon)"
add() { "$BIN/expensectl" --socket "$D/c.sock" add --merchant Floor --amount 1.00 --currency EUR --date 2026-12-06 > /dev/null; }
add
echo "expensed after one add: $(memory $daemon)"
for _ in $(seq "$N"); do add; done
echo "expensed after $N more: $(memory $daemon)"
