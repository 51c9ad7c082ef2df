#!/usr/bin/env bash
# Copied unchanged (but for this line) from the project's shared/bench/pg-ceiling.sh: the baseline every throughput figure is divided by.
# The physical ceiling for a PostgreSQL job queue on this machine: the bare SQL a job needs at the least
# (claim a batch with SKIP LOCKED, then delete it), run by pgbench with no application in between.
# Prints one JSON line. Usage: pg-ceiling.sh [seconds] [clients]; connection from PGHOST/PGPORT/PGUSER
# (default 127.0.0.1:5432, postgres). Creates and drops a scratch database.
set -euo pipefail
secs=${1:-10} clients=${2:-4}
export PGHOST=${PGHOST:-127.0.0.1} PGPORT=${PGPORT:-5432} PGUSER=${PGUSER:-postgres}
pgbench=$(command -v pgbench || ls /usr/lib/postgresql/*/bin/pgbench 2>/dev/null | tail -n 1)
[ -x "$pgbench" ] || { echo '{"error":"pgbench not found"}'; exit 2; }
db=ceiling_$$
work=$(mktemp -d)
trap 'dropdb --if-exists "$db" >/dev/null 2>&1; rm -rf "$work"' EXIT
createdb "$db"
psql -qX -d "$db" >/dev/null <<'SQL'
CREATE TABLE jobs (id bigserial PRIMARY KEY, tenant int NOT NULL, state smallint NOT NULL DEFAULT 0,
                   run_at timestamptz NOT NULL DEFAULT now(), payload jsonb);
CREATE INDEX jobs_ready ON jobs (id) WHERE state = 0;
INSERT INTO jobs (tenant, payload) SELECT g % 100, '{}' FROM generate_series(1, 1500000) g;
VACUUM ANALYZE jobs;
SQL
cat >"$work/batch.sql" <<'SQL'
WITH c AS (SELECT id FROM jobs WHERE state = 0 ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED),
     u AS (UPDATE jobs j SET state = 1 FROM c WHERE j.id = c.id RETURNING j.id)
SELECT coalesce(min(id), 0) AS lo, coalesce(max(id), -1) AS hi FROM u \gset
DELETE FROM jobs WHERE id BETWEEN :lo AND :hi AND state = 1;
SQL
before=$(psql -qXtA -d "$db" -c "SELECT count(*) FROM jobs")
"$pgbench" -n -M prepared -T "$secs" -c "$clients" -j 2 -f "$work/batch.sql" "$db" >"$work/out" 2>&1
after=$(psql -qXtA -d "$db" -c "SELECT count(*) FROM jobs")
rate=$(( (before - after) / secs ))
echo "{\"bench\":\"pg_ceiling\",\"sql\":\"claim 100 with SKIP LOCKED, then delete them\",\"clients\":$clients,\"seconds\":$secs,\"jobs_per_s\":$rate}"
