package dev.fairq.worker;

/** An error no retry can fix (bad payload, a 4xx from a webhook): the job dead-letters at once. */
public class PermanentJobException extends Exception {
    public PermanentJobException(String message) {
        super(message);
    }

    public PermanentJobException(String message, Throwable cause) {
        super(message, cause);
    }
}
