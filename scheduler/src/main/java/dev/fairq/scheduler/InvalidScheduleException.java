package dev.fairq.scheduler;

import dev.fairq.schema.FieldError;
import dev.fairq.schema.InvalidFieldsException;

import java.util.List;

/** A schedule that cannot be stored, with every field at fault; nothing was written. */
public final class InvalidScheduleException extends InvalidFieldsException {
    public InvalidScheduleException(List<FieldError> errors) {
        super("schedule", errors);
    }
}
