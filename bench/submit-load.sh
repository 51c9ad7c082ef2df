#!/usr/bin/env bash
# POST /v1/jobs and POST /v1/jobs/batch under 16 callers (wrk), on a fresh scratch database, with the CPU each side
# spent per single submit (PostgreSQL: this database's backends, bench/pg-cpu.sh). For A/B runs of two builds: run it with each jar in turn, alternating, and compare within
# a pair (the figures drift from one pair to the next). Needs wrk and a PostgreSQL reachable as below.
# Usage: bench/submit-load.sh JAR LABEL   (PGHOST/PGPORT/PGUSER, default 127.0.0.1:5432 postgres; ports 18480-18481)
# Prints two lines: "LABEL single: p50 p99 requests/s jvm_cpu_ms_per_req pg_cpu_ms_per_req" and "LABEL batch: requests/s".
set -euo pipefail
jar=$1 label=$2
export PGHOST=${PGHOST:-127.0.0.1} PGPORT=${PGPORT:-5432} PGUSER=${PGUSER:-postgres}
db=submitload_$$ work=$(mktemp -d) token=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
createdb "$db"
FAIRQ_DATABASE_URL="jdbc:postgresql://$PGHOST:$PGPORT/$db" FAIRQ_DATABASE_USER="$PGUSER" FAIRQ_ADMIN_TOKEN="$token" \
  FAIRQ_PORT=18480 FAIRQ_ADMIN_PORT=18481 FAIRQ_DEMO_HANDLERS=true FAIRQ_WORKER_THREADS=8 \
  java -jar "$jar" server > "$work/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; dropdb --if-exists "$db"; rm -rf "$work"' EXIT
for _ in $(seq 1 240); do curl -s -o /dev/null localhost:18480/v1/stats && break; sleep 0.5; done
auth="Authorization: Bearer $token"
curl -sf -X PUT -H "$auth" -H 'Content-Type: application/json' -o /dev/null localhost:18480/v1/admin/tenants/load \
  -d '{"rate_per_second": 1000000, "burst": 1000000, "max_running": 100000, "max_queued": 100000000, "api_rate_per_second": 1000000, "api_burst": 1000000}'
export KEY=$(curl -sf -X POST -H "$auth" localhost:18480/v1/admin/tenants/load/keys | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')
cat > "$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("KEY")
wrk.body = os.getenv("BODY")
LUA
export BODY='{"type": "noop", "payload": {"hello": "world"}}'
wrk -t2 -c16 -d60s -s "$work/post.lua" http://localhost:18480/v1/jobs > /dev/null # warm-up: the JIT, the pools
. "$(dirname "$0")/pg-cpu.sh"
pg0=$(db_ticks "$db") jvm0=$(awk '{print $14 + $15}' /proc/$server/stat)
single=$(wrk --latency -t2 -c16 -d30s -s "$work/post.lua" http://localhost:18480/v1/jobs)
pg1=$(db_ticks "$db") jvm1=$(awk '{print $14 + $15}' /proc/$server/stat)
pg_spent=$(ticks_between "$pg0" "$pg1")
export BODY=$(python3 -c 'print("{\"jobs\": [" + ", ".join(["{\"type\": \"noop\", \"payload\": {}}"] * 100) + "]}")')
batch=$(wrk -t2 -c16 -d30s -s "$work/post.lua" http://localhost:18480/v1/jobs/batch)
rps=$(echo "$single" | awk '/Requests\/sec/ {print $2}')
hz=$(getconf CLK_TCK)
echo "$label single: p50 $(echo "$single" | awk '$1 == "50%" {print $2}') p99 $(echo "$single" | awk '$1 == "99%" {print $2}')" \
  "requests/s $rps jvm_cpu_ms_per_req $(python3 -c "print(round(($jvm1 - $jvm0) / $hz * 1000 / ($rps * 30), 2))")" \
  "pg_cpu_ms_per_req $(python3 -c "print(round($pg_spent / $hz * 1000 / ($rps * 30), 2))")" \
  "non_2xx $(echo "$single" | awk '/Non-2xx/ {print $4}')"
echo "$label batch: requests/s $(echo "$batch" | awk '/Requests\/sec/ {print $2}') non_2xx $(echo "$batch" | awk '/Non-2xx/ {print $4}')"
