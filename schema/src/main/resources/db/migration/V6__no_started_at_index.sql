-- The dashboard's started-attempt counts (DashboardStore: ROLLUP and STARTS) now come from the finished,
-- failed and lease indexes. This index took an entry at every claim and another at every completion, the
-- queue's two hottest writes: without it the no-op drain went from 27,600 to 31,900-38,600 jobs/s
-- (bench/RESULTS.md).
DROP INDEX jobs_tenant_started_idx;
