package dev.fairq.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import dev.fairq.schema.FieldError;
import io.swagger.v3.oas.annotations.media.Schema;

import java.util.List;

/** Every error answer: a message, and the fields at fault when there are some. */
@Schema(name = "Error", description = "Every 4xx answer (and a 5xx from fairq itself)")
public record ErrorBody(
        @Schema(requiredMode = Schema.RequiredMode.REQUIRED, example = "invalid fields: [priority: must be between -100 and 100]")
        String error,
        @Schema(description = "the fields at fault; left out when none (e.g. jobs[3].type in a batch)")
        @JsonInclude(JsonInclude.Include.NON_EMPTY)
        List<FieldErrorView> errors) {

    @Schema(name = "FieldError")
    public record FieldErrorView(@Schema(requiredMode = Schema.RequiredMode.REQUIRED, example = "jobs[3].type") String field,
                                 @Schema(requiredMode = Schema.RequiredMode.REQUIRED) String message) {}

    static ErrorBody of(String message, List<FieldError> errors) {
        return new ErrorBody(message, errors.stream().map(e -> new FieldErrorView(e.field(), e.message())).toList());
    }
}
