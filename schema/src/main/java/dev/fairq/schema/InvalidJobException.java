package dev.fairq.schema;

import java.util.List;

/** A job request that cannot be stored; nothing was written. */
public class InvalidJobException extends InvalidFieldsException {
    public InvalidJobException(List<FieldError> errors) {
        super("job", errors);
    }
}
