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
        // first, and alone for nearly every request: no body, or read to its end (Jersey's hasEntity throws once a
        // reader closed the stream, an exception made per request)
        if (finished()) return;
        try {
            if (!request.hasEntity()) return;
        } catch (IllegalStateException closed) { // a reader closed it before its end: it stopped at its cap
            response.getHeaders().putSingle("Connection", "close");
            return;
        } catch (RuntimeException broken) { // a body that cannot be read (bad gzip): a 500 here hid the real answer
            response.getHeaders().putSingle("Connection", "close");
            return;
        }
        byte[] scratch = new byte[8192];
        long left = DRAIN_LIMIT;
        try {
            InputStream in = request.getEntityStream();
            int n;
            while (left > 0 && (n = in.read(scratch, 0, (int) Math.min(scratch.length, left))) >= 0) left -= n;
            if (left > 0 || in.read() < 0) return; // drained to its end
        } catch (IOException | RuntimeException e) {
            // the client went away or sent a broken body (Jetty's gzip decoder throws a RuntimeException for bad
            // bytes): nothing more to read on this connection
        }
        response.getHeaders().putSingle("Connection", "close");
    }

    private boolean finished() {
        try {
            return servlet.getInputStream().isFinished();
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }
}
