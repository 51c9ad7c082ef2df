package dev.fairq.api;

import com.fasterxml.jackson.core.JsonProcessingException;
import dev.fairq.schema.Json;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

/**
 * The errors Jetty answers itself, before any resource runs (a malformed or ambiguous URI, {@code /v1/jobs/%zz} or
 * {@code /v1/..%2f}: 400; headers over 8 KiB: 431; no such path on the admin port: 404), in the same body as every
 * other error, {@code {"error": "HTTP 400 Bad Request: Ambiguous URI path separator"}}, whatever the request's
 * Accept. Jetty's own handler answered them as an HTML page (a JSON client read "<html>"); its JSON, asked for with
 * Accept, has another shape.
 */
final class JsonErrorHandlers {
    private JsonErrorHandlers() {}

    private static final List<Charset> UTF_8 = List.of(StandardCharsets.UTF_8);

    /**
     * Said of a 400 Jetty gives no reason for: what it refuses that way is a request it could not read
     * ({@code %zz}, an encoded NUL, a malformed request line or header).
     */
    static final String UNREADABLE = "the request line, URI or headers could not be read (a '%' must be followed by two "
            + "hex digits, and no encoded control character is taken)";

    /** The body: the status line, then Jetty's reason when it says more; no exception text for a 5xx. */
    static String body(int code, String message) {
        String status = "HTTP " + code + " " + HttpStatus.getMessage(code);
        boolean more = code < 500 && message != null && !message.isBlank() && !message.equals(HttpStatus.getMessage(code));
        if (!more && code == 400) {
            message = UNREADABLE;
            more = true;
        }
        try {
            return Json.MAPPER.writeValueAsString(Map.of("error", more ? status + ": " + message : status));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The server's handler: requests that fail before reaching a context (the URI, the headers). */
    static final class ServerLevel extends org.eclipse.jetty.server.handler.ErrorHandler {
        /** Every method gets the body: Jetty writes one for GET, POST and HEAD only (a PUT's 400 came empty). */
        @Override
        public boolean errorPageForMethod(String method) {
            return true;
        }

        @Override
        protected boolean generateAcceptableResponse(Request request, Response response, Callback callback, String contentType,
                                                     List<Charset> charsets, int code, String message, Throwable cause) throws IOException {
            return super.generateAcceptableResponse(request, response, callback, "application/json", UTF_8, code, message, cause);
        }

        @Override
        protected void writeErrorJson(Request request, PrintWriter writer, int code, String message, Throwable cause) {
            writer.write(body(code, message));
        }
    }

    /** A servlet context's handler (the admin port's servlets, a servlet's sendError). */
    static final class ContextLevel extends org.eclipse.jetty.ee10.servlet.ErrorHandler {
        @Override
        public boolean errorPageForMethod(String method) {
            return true;
        }

        @Override
        protected boolean generateAcceptableResponse(Request request, Response response, Callback callback, String contentType,
                                                     List<Charset> charsets, int code, String message, Throwable cause) throws IOException {
            return super.generateAcceptableResponse(request, response, callback, "application/json", UTF_8, code, message, cause);
        }

        @Override
        protected void writeErrorJson(Request request, PrintWriter writer, int code, String message, Throwable cause) {
            writer.write(body(code, message));
        }
    }
}
