package dev.fairq.api;

import dev.fairq.schema.FieldError;
import dev.fairq.schema.InvalidJobException;
import dev.fairq.schema.QueueFullException;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.ext.ExceptionMapper;

import java.util.List;
import java.util.Map;

/** Error bodies ({@link ErrorBody}): {@code {"error": "...", "errors": [{"field": "...", "message": "..."}]}}. */
final class ApiExceptionMappers {
    private ApiExceptionMappers() {}

    static Response response(int status, String message, List<FieldError> errors, Map<String, String> headers) {
        Response.ResponseBuilder b = Response.status(status).type(MediaType.APPLICATION_JSON_TYPE)
                .entity(ErrorBody.of(message, errors));
        headers.forEach(b::header);
        return b.build();
    }

    static final class Api implements ExceptionMapper<ApiException> {
        @Override
        public Response toResponse(ApiException e) {
            return response(e.status, e.getMessage(), e.errors, e.headers);
        }
    }

    /** The store validates again before it writes: a field it rejects is still a 422 naming the field. */
    static final class InvalidJob implements ExceptionMapper<InvalidJobException> {
        @Override
        public Response toResponse(InvalidJobException e) {
            return response(422, "invalid fields: " + e.errors(), e.errors(), Map.of());
        }
    }

    /**
     * Jersey's own refusals, before any resource runs: no such route (404), a method the route does not have
     * (405, with its Allow header), a Content-Type it does not take (415) or an Accept it cannot give (406). In
     * the error shape like every other 4xx (Dropwizard's mapper had answered {"code", "message"}).
     */
    static final class JerseyRefusal implements ExceptionMapper<jakarta.ws.rs.ClientErrorException> {
        @Override
        public Response toResponse(jakarta.ws.rs.ClientErrorException e) {
            Response original = e.getResponse();
            Response.ResponseBuilder b = Response.status(original.getStatus()).type(MediaType.APPLICATION_JSON_TYPE)
                    .entity(ErrorBody.of(e.getMessage() == null ? "HTTP " + original.getStatus() : e.getMessage(), List.of()));
            original.getStringHeaders().forEach((name, values) -> {
                if (!name.equalsIgnoreCase("Content-Type")) values.forEach(v -> b.header(name, v));
            });
            return b.build();
        }
    }

    /** What a 429 asks the client to wait: the queue drains at the tenant's rate, so a few seconds, not minutes. */
    static final long RETRY_AFTER_SECONDS = 5;

    static final class QueueFull implements ExceptionMapper<QueueFullException> {
        @Override
        public Response toResponse(QueueFullException e) {
            // a batch larger than max_queued never fits, however long the client waits: say so, and say the batch's size
            // ("the tenant has 0 jobs queued; its max_queued is 5" left the client guessing why it was refused)
            String message = e.adding() > e.maxQueued()
                    ? "a request of " + e.adding() + " jobs can never fit under max_queued " + e.maxQueued()
                            + " (the tenant has " + e.queuedText() + " queued): send at most " + e.maxQueued() + " at once"
                    : "the tenant has " + e.queuedText() + " queued and this request adds " + e.adding()
                            + "; its max_queued is " + e.maxQueued();
            return response(429, message, List.of(), Map.of("Retry-After", Long.toString(RETRY_AFTER_SECONDS)));
        }
    }
}
