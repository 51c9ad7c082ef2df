package dev.fairq.scheduler;

import dev.fairq.schema.FieldError;

import java.util.List;

/** A schedule that cannot be stored, with every field at fault; nothing was written. */
public final class InvalidScheduleException extends IllegalArgumentException {
    private final List<FieldError> errors;

    public InvalidScheduleException(List<FieldError> errors) {
        super("invalid schedule: " + errors);
        this.errors = List.copyOf(errors);
    }

    public List<FieldError> errors() {
        return errors;
    }
}
