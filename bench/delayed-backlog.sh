#!/usr/bin/env bash
# The scheduler's cost with one tenant holding 400,000 jobs due tomorrow (half of them under a fairness key) while
# it submits due jobs: batches of 20 (every other one keyed), 5 a second, so that the grants admit one or two and the
# rounds the rest. For A/B runs of two builds (alternate them, compare within a pair). Needs a PostgreSQL reachable
# as below. Usage: bench/delayed-backlog.sh JAR LABEL   (PGHOST/PGPORT/PGUSER, default 127.0.0.1:5432 postgres;
# ports 18490-18491). Prints "LABEL: ticks/s, mean tick ms, server and PostgreSQL CPU (cores)" over 30 s after 15 s.
set -euo pipefail
jar=$1 label=$2
export PGHOST=${PGHOST:-127.0.0.1} PGPORT=${PGPORT:-5432} PGUSER=${PGUSER:-postgres}
db=delayed_$$ work=$(mktemp -d) token=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
createdb "$db"
: > "$work/tenants.yml"
FAIRQ_DATABASE_URL="jdbc:postgresql://$PGHOST:$PGPORT/$db" FAIRQ_DATABASE_USER="$PGUSER" FAIRQ_ADMIN_TOKEN="$token" \
  FAIRQ_PORT=18490 FAIRQ_ADMIN_PORT=18491 FAIRQ_DEMO_HANDLERS=true FAIRQ_TENANTS="$work/tenants.yml" \
  java -jar "$jar" server > "$work/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; dropdb --if-exists "$db"; rm -rf "$work"' EXIT
for _ in $(seq 1 240); do curl -s -o /dev/null localhost:18491/ping && break; sleep 0.5; done
auth="Authorization: Bearer $token"
curl -sf -X PUT -H "$auth" -H 'Content-Type: application/json' -o /dev/null localhost:18490/v1/admin/tenants/rem \
  -d '{"rate_per_second": 1000, "burst": 1000, "max_running": 100, "max_queued": 10000000}'
key=$(curl -sf -X POST -H "$auth" localhost:18490/v1/admin/tenants/rem/keys | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')
psql -q -d "$db" -c "INSERT INTO jobs (tenant_id, type, run_at) SELECT 'rem', 'noop', now() + interval '1 day' FROM generate_series(1, 200000)" \
  -c "INSERT INTO jobs (tenant_id, type, fairness_key, run_at) SELECT 'rem', 'noop', 'later', now() + interval '1 day' FROM generate_series(1, 200000)" \
  -c "VACUUM ANALYZE jobs"
batch=$(python3 -c 'import json; print(json.dumps({"jobs": [dict({"type": "noop", "payload": {}}, **({"fairness_key": "now"} if i % 2 else {})) for i in range(20)]}))')
submit() { local end=$((SECONDS + $1)); while [ $SECONDS -lt $end ]; do
  curl -sf -o /dev/null -X POST -H "Authorization: Bearer $key" -H 'Content-Type: application/json' -d "$batch" localhost:18490/v1/jobs/batch
  sleep 0.2; done; }
ticks() { curl -s localhost:18491/metrics | awk '/^fairq_scheduler_tick_seconds_sum/ {s = $2} /^fairq_scheduler_tick_seconds_count/ {c = $2} END {print s, c}'; }
. "$(dirname "$0")/pg-cpu.sh" # PostgreSQL: this database's backends only
submit 15
read -r s0 c0 <<< "$(ticks)"; t0=$(date +%s.%N); jvm0=$(awk '{print $14 + $15}' /proc/$server/stat); pg0=$(db_ticks "$db")
submit 30
read -r s1 c1 <<< "$(ticks)"; t1=$(date +%s.%N); jvm1=$(awk '{print $14 + $15}' /proc/$server/stat); pg1=$(db_ticks "$db")
pg_spent=$(ticks_between "$pg0" "$pg1")
python3 -c "
s0, c0, s1, c1, t0, t1 = $s0, $c0, $s1, $c1, $t0, $t1
hz = 100.0
print('$label: %.1f ticks/s, mean tick %.2f ms, server %.3f cores, PostgreSQL %.3f cores'
      % ((c1 - c0) / (t1 - t0), 1000 * (s1 - s0) / max(c1 - c0, 1), ($jvm1 - $jvm0) / hz / (t1 - t0),
         $pg_spent / hz / (t1 - t0)))"
