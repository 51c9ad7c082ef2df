package dev.fairq.api;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.container.ContainerResponseContext;
import jakarta.ws.rs.container.ContainerResponseFilter;
import jakarta.ws.rs.core.Context;

import java.io.IOException;
import java.io.InputStream;

/**
 * A request answered without its body read (a 401 or 429 refused before the resource, a body past the read cap):
 * Jetty closed the connection after the answer without saying so, and the client's next request on it found a dead
 * socket (curl retried; a client that does not retry a POST failed it). The rest of the body is read and dropped
 * here, up to {@link #DRAIN_LIMIT}, so the connection stays usable; past that the answer says
 * {@code Connection: close}, and the client opens a new one knowingly.
 */
final class UnreadBodyFilter implements ContainerResponseFilter {
    /** 1 MiB: a refused single job (FAIRQ_MAX_PAYLOAD_BYTES is 64 KiB by default) is read to its end, and fast. */
    static final int DRAIN_LIMIT = 1 << 20;

    /** The servlet request of the call being answered (a proxy Jersey binds to it). */
    @Context
    private HttpServletRequest servlet;

    @Override
    public void filter(ContainerRequestContext request, ContainerResponseContext response) {
        // finished() first, and alone for nearly every request (no body, or read to its end): Jersey's hasEntity
        // throws once a reader closed the stream, an exception made per request
        if (!finished() && !drained(request)) response.getHeaders().putSingle("Connection", "close");
    }

    /** Reads the rest of the body, up to {@link #DRAIN_LIMIT}; false when some is left or cannot be read. */
    private static boolean drained(ContainerRequestContext request) {
        try {
            if (!request.hasEntity()) return true;
            InputStream in = request.getEntityStream();
            byte[] scratch = new byte[8192];
            long left = DRAIN_LIMIT;
            int n;
            while (left > 0 && (n = in.read(scratch, 0, (int) Math.min(scratch.length, left))) >= 0) left -= n;
            return left > 0 || in.read() < 0;
        } catch (IOException | RuntimeException e) {
            // a reader closed the stream before its end (it stopped at its cap: IllegalStateException), the client
            // went away, or the body cannot be read (Jetty's gzip decoder throws a RuntimeException for bad bytes; a
            // 500 from here had hidden the real answer, a 400)
            return false;
        }
    }

    private boolean finished() {
        try {
            return servlet.getInputStream().isFinished();
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }
}
