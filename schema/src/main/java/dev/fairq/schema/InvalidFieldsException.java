package dev.fairq.schema;

import java.util.List;

/** A request (a job, a schedule) that cannot be stored, with every field at fault; nothing was written. */
public abstract class InvalidFieldsException extends IllegalArgumentException {
    private final List<FieldError> errors;

    /** {@code what}: the kind of request, for the message ("invalid job: [...]"). */
    protected InvalidFieldsException(String what, List<FieldError> errors) {
        super("invalid " + what + ": " + errors);
        this.errors = List.copyOf(errors);
    }

    public List<FieldError> errors() {
        return errors;
    }
}
