package dev.fairq.schema;

import dev.fairq.schema.generated.tables.records.JobsRecord;

/** The stored job, and whether this call created it (false: a job with the same job_key already existed). */
public record EnqueueResult(JobsRecord job, boolean created) {
}
