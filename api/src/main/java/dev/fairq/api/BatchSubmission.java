package dev.fairq.api;

import dev.fairq.schema.FieldError;
import io.swagger.v3.oas.annotations.media.ArraySchema;
import io.swagger.v3.oas.annotations.media.Schema;
import jakarta.validation.Valid;
import jakarta.validation.constraints.NotNull;

import java.util.List;

/** POST /v1/jobs/batch: up to {@link #MAX_BATCH} jobs, stored all or nothing. */
@Schema(name = "BatchSubmission")
public record BatchSubmission(
        @ArraySchema(minItems = 1, maxItems = MAX_BATCH, schema = @Schema(implementation = JobSubmission.class))
        @Schema(requiredMode = Schema.RequiredMode.REQUIRED)
        @NotNull(message = JOBS_RULE)
        @RequestBody.WrongType(JOBS_RULE)
        List<@Valid JobSubmission> jobs) implements RequestBody {
    static final int MAX_BATCH = 1000;
    static final String JOBS_RULE = "is required: an array of jobs";

    /** The count in the message ("not 1001") is more than Bean Validation's messages can say. */
    @Override
    public List<FieldError> check() {
        if (jobs == null || (!jobs.isEmpty() && jobs.size() <= MAX_BATCH)) return List.of();
        return List.of(new FieldError("jobs", "must hold 1 to " + MAX_BATCH + " jobs, not " + jobs.size()));
    }
}
