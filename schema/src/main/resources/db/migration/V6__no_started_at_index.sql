-- The dashboard's started-attempt counts (DashboardStore: ROLLUP and STARTS) now come from the finished,
-- failed and lease indexes. This index took an entry at every claim and another at every completion, the
-- queue's two hottest writes: dropping it raised the no-op drain by about 10-15% (bench/RESULTS.md).
DROP INDEX jobs_tenant_started_idx;
