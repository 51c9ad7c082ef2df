-- Retention now reads jobs_tenant_finished_idx (tenant_id, status, finished_at), one range per tenant and
-- status (JobStore.DELETE_FINISHED). This index served only retention and took one more entry per finished
-- job on the queue's hottest write, the completion.
DROP INDEX jobs_finished_idx;
