package dev.fairq.schema;

import java.util.List;

/** A job request that cannot be stored; nothing was written. */
public class InvalidJobException extends IllegalArgumentException {
    private final List<FieldError> errors;

    public InvalidJobException(List<FieldError> errors) {
        super("invalid job: " + errors);
        this.errors = List.copyOf(errors);
    }

    public List<FieldError> errors() {
        return errors;
    }
}
