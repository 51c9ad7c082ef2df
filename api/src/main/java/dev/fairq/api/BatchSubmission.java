package dev.fairq.api;

import io.swagger.v3.oas.annotations.media.Schema;
import jakarta.validation.Valid;
import jakarta.validation.constraints.NotNull;
import jakarta.validation.constraints.Size;

import java.util.List;

/** POST /v1/jobs/batch: up to {@link #MAX_BATCH} jobs, stored all or nothing. */
@Schema(name = "BatchSubmission")
public record BatchSubmission(
        @Schema(requiredMode = Schema.RequiredMode.REQUIRED)
        @NotNull(message = JOBS_RULE)
        @Size(min = 1, max = MAX_BATCH, message = "must hold {min} to {max} jobs, not ${validatedValue.size()}")
        @RequestBody.WrongType(JOBS_RULE)
        List<@Valid JobSubmission> jobs) implements RequestBody {
    static final int MAX_BATCH = 1000;
    static final String JOBS_RULE = "is required: an array of jobs";
}
