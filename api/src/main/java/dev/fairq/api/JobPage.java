package dev.fairq.api;

import dev.fairq.schema.FieldError;
import dev.fairq.schema.JobQueries;
import dev.fairq.schema.JobStore;
import dev.fairq.schema.generated.enums.JobStatus;
import dev.fairq.schema.generated.tables.records.JobsRecord;
import org.jooq.DSLContext;

import java.util.ArrayList;
import java.util.List;

/**
 * A keyset page of jobs, newest first. {@code next} is the cursor for the following page (pass it as
 * {@code after}); null on the last page. A page filtered on queue, type or ordering_key may hold fewer jobs than
 * asked, even none, and still have a next ({@link JobQueries#FILTERED_SCAN}).
 */
@io.swagger.v3.oas.annotations.media.Schema(name = "JobPage")
public record JobPage(List<JobView> jobs,
                      @io.swagger.v3.oas.annotations.media.Schema(description = "pass back as after for the next page; null on the last (only null says so: a page filtered on queue, type or ordering_key may be short, even empty, with a next)")
                      String next) {
    static final int DEFAULT_LIMIT = 50;
    static final int MAX_LIMIT = 500;

    static JobPage fetch(JobQueries queries, DSLContext db, String tenantOrNull, String status, String queue, String type,
                         String orderingKey, String limit, String after) {
        List<FieldError> errors = new ArrayList<>();
        JobStatus st = null;
        if (status != null && !status.isBlank()) {
            for (JobStatus s : JobStatus.values()) if (s.getLiteral().equals(status)) st = s;
            if (st == null) errors.add(new FieldError("status", "must be one of pending, ready, running, succeeded, dead, cancelled"));
        }
        int lim = ParameterGuard.pageSize(limit, DEFAULT_LIMIT, MAX_LIMIT, errors);
        Long afterId = ParameterGuard.afterId(after, errors);
        if (!errors.isEmpty()) throw ApiException.invalid(errors);
        // only an empty ordering_key means no filter: " " is a key a job can have (no queue or type is blank), and
        // ordering_key=%20 had answered every job
        JobQueries.Page page = queries.page(db, new JobQueries.JobFilter(tenantOrNull, st, blank(queue), blank(type),
                orderingKey == null || orderingKey.isEmpty() ? null : orderingKey), afterId, lim);
        List<JobView> jobs = new ArrayList<>(page.jobs().size());
        for (JobsRecord j : page.jobs()) jobs.add(JobView.of(j));
        return new JobPage(jobs, page.next() == null ? null : Long.toString(page.next()));
    }

    private static String blank(String s) {
        return s == null || s.isBlank() ? null : s;
    }
}
