package dev.fairq.client;

import java.time.Duration;
import java.util.List;

/**
 * An answer other than success, by kind. {@link #status()} is the HTTP status (0 when no answer came),
 * {@link #getMessage()} the server's {@code error}, {@link #fieldErrors()} the fields it named.
 */
public class FairqException extends RuntimeException {
    private final int status;
    private final List<Model.FieldError> fieldErrors;

    public FairqException(int status, String message, List<Model.FieldError> fieldErrors, Throwable cause) {
        super(message, cause);
        this.status = status;
        this.fieldErrors = fieldErrors == null ? List.of() : List.copyOf(fieldErrors);
    }

    public int status() {
        return status;
    }

    public List<Model.FieldError> fieldErrors() {
        return fieldErrors;
    }

    static FairqException of(int status, String message, List<Model.FieldError> errors, Duration retryAfter) {
        return switch (status) {
            case 400 -> new BadRequestException(message);
            case 401 -> new UnauthorizedException(message);
            case 403 -> new ForbiddenException(message);
            case 404 -> new NotFoundException(message);
            case 409 -> new ConflictException(message, errors);
            case 412 -> new PreconditionFailedException(message);
            case 413 -> new PayloadTooLargeException(message, errors);
            case 422 -> new ValidationException(message, errors);
            case 429 -> new QueueFullException(message, retryAfter);
            default -> status >= 500 ? new ServerException(status, message) : new FairqException(status, message, errors, null);
        };
    }

    /** 400: the body is not a JSON object. */
    public static class BadRequestException extends FairqException {
        public BadRequestException(String message) { super(400, message, List.of(), null); }
    }

    /** 401: no token, or an unknown or revoked one. */
    public static class UnauthorizedException extends FairqException {
        public UnauthorizedException(String message) { super(401, message, List.of(), null); }
    }

    /** 403: the wrong kind of token (a tenant key on the admin API, the admin token on a tenant's endpoint). */
    public static class ForbiddenException extends FairqException {
        public ForbiddenException(String message) { super(403, message, List.of(), null); }
    }

    /** 404: no such job, tenant or key (another tenant's job is not found either). */
    public static class NotFoundException extends FairqException {
        public NotFoundException(String message) { super(404, message, List.of(), null); }
    }

    /** 409: a job_key used with a different request, or a job in a status the action does not apply to. */
    public static class ConflictException extends FairqException {
        public ConflictException(String message, List<Model.FieldError> errors) { super(409, message, errors, null); }
    }

    /** 412: a conditional request's condition was false (a create-only PUT of something that exists); nothing changed. */
    public static class PreconditionFailedException extends FairqException {
        public PreconditionFailedException(String message) { super(412, message, List.of(), null); }
    }

    /** 413: a payload larger than the server's FAIRQ_MAX_PAYLOAD_BYTES. */
    public static class PayloadTooLargeException extends FairqException {
        public PayloadTooLargeException(String message, List<Model.FieldError> errors) { super(413, message, errors, null); }
    }

    /** 422: invalid or unknown fields, each in {@link #fieldErrors()}; nothing was written. */
    public static class ValidationException extends FairqException {
        public ValidationException(String message, List<Model.FieldError> errors) { super(422, message, errors, null); }
    }

    /**
     * 429: the tenant has max_queued jobs waiting, or used up its API request limit (api_rate_per_second); nothing
     * was written. Try again after {@link #retryAfter()}.
     */
    public static class QueueFullException extends FairqException {
        private final Duration retryAfter;

        public QueueFullException(String message, Duration retryAfter) {
            super(429, message, List.of(), null);
            this.retryAfter = retryAfter;
        }

        public Duration retryAfter() {
            return retryAfter;
        }
    }

    /** 5xx. */
    public static class ServerException extends FairqException {
        public ServerException(int status, String message) { super(status, message, List.of(), null); }
    }

    /** No answer: the server could not be reached, or the connection broke (status 0). */
    public static class ConnectionException extends FairqException {
        public ConnectionException(String message, Throwable cause) { super(0, message, List.of(), cause); }
    }
}
