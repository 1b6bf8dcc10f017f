#!/bin/bash
# Makes a state directory with the current (schema 2) expensed: two synced
# expenses (one with a receipt), one queued with a receipt, one edit pending.
set -euo pipefail
B=${BUILD:-.build/debug}
D=$(mktemp -d /tmp/acc-fixture.XXXX)
TOKEN=$($B/expense-server user add alice --data-dir $D/server)
printf '%s\n' "$TOKEN" > $D/token; chmod 600 $D/token
$B/expense-server serve --listen 127.0.0.1:0 --data-dir $D/server 2> $D/server.log &
SP=$!
for i in $(seq 100); do grep -q "listening on" $D/server.log && break; sleep 0.1; done
PORT=$(grep -o 'listening on 127.0.0.1:[0-9]*' $D/server.log | cut -d: -f2)
: > $D/expensed.conf
$B/expensed --config $D/expensed.conf --state-dir $D/state --socket $D/sock --spool-dir none --log-target stderr \
  --server http://127.0.0.1:$PORT --token-file $D/token --drain-interval 200ms 2> $D/daemon.log &
DP=$!
for i in $(seq 100); do $B/expensectl --socket $D/sock status >/dev/null 2>&1 && break; sleep 0.1; done
/usr/bin/convert -size 40x30 xc:white $D/r.jpg
$B/expensectl --socket $D/sock add --merchant "Synced One" --amount 12.50 --currency EUR --date 2026-11-29
$B/expensectl --socket $D/sock add --merchant "Synced Two" --amount 3.00 --currency EUR --date 2026-11-30 --receipt $D/r.jpg
$B/expensectl --socket $D/sock sync --wait
kill $SP; wait $SP || true
$B/expensectl --socket $D/sock add --merchant "Queued Three" --amount 7.25 --currency EUR --date 2026-12-01 --receipt $D/r.jpg
ID=$($B/expensectl --socket $D/sock list --json | python3 -c 'import json,sys; print([e for e in json.load(sys.stdin) if e["merchant"]=="Synced One"][0]["transaction_id"])')
$B/expensectl --socket $D/sock edit $ID --comment "edited offline"
$B/expensectl --socket $D/sock list
kill $DP; wait $DP || true
sqlite3 $D/state/expensed.db "PRAGMA wal_checkpoint(TRUNCATE);" || true
echo $D
