package dev.fairq.worker.handlers;

import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Function;

/**
 * A webhook receiver on 127.0.0.1 (an ephemeral port) that records every request and answers what the test
 * says. Requests are handled on a pool, so overlapping requests would really overlap.
 */
final class Receiver implements AutoCloseable {
    /**
     * One request as received and the status it was answered with; {@code startNanos}/{@code endNanos}
     * bracket the handling (end: before the answer is sent).
     */
    record Request(String method, String path, Headers headers, String body, int status, long startNanos,
                   long endNanos) {
        String header(String name) {
            return headers.getFirst(name);
        }
    }

    /** What to answer. */
    record Reply(int status, Map<String, String> headers, String body) {
        static Reply of(int status) {
            return new Reply(status, Map.of(), "");
        }

        static Reply of(int status, String body) {
            return new Reply(status, Map.of(), body);
        }
    }

    private final HttpServer server;
    private final ExecutorService pool = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "test-receiver");
        t.setDaemon(true);
        return t;
    });
    final List<Request> requests = new CopyOnWriteArrayList<>();
    private volatile Function<Request, Reply> responder = r -> Reply.of(200);

    Receiver() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0), 50);
        server.setExecutor(pool);
        server.createContext("/", this::handle);
        server.start();
    }

    Receiver answer(Function<Request, Reply> responder) {
        this.responder = responder;
        return this;
    }

    int port() {
        return server.getAddress().getPort();
    }

    String url(String path) {
        return "http://127.0.0.1:" + port() + path;
    }

    private void handle(HttpExchange exchange) throws IOException {
        long start = System.nanoTime();
        try (exchange) {
            String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
            Request seen = new Request(exchange.getRequestMethod(), exchange.getRequestURI().toString(),
                    exchange.getRequestHeaders(), body, 0, start, 0);
            Reply reply;
            try {
                reply = responder.apply(seen);
            } catch (RuntimeException e) {
                reply = Reply.of(599, "responder failed: " + e);
            }
            // recorded before the answer leaves: the client cannot have seen it yet, so a later request
            // that depends on this one's outcome must start after endNanos
            requests.add(new Request(seen.method(), seen.path(), seen.headers(), seen.body(), reply.status(), start,
                    System.nanoTime()));
            reply.headers().forEach((k, v) -> exchange.getResponseHeaders().add(k, v));
            byte[] out = reply.body().getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(reply.status(), out.length == 0 ? -1 : out.length);
            if (out.length > 0) {
                try (OutputStream os = exchange.getResponseBody()) {
                    os.write(out);
                } catch (IOException e) {
                    // the client may hang up early (it reads only an excerpt); nothing to do
                }
            }
        }
    }

    @Override
    public void close() {
        server.stop(0);
        pool.shutdownNow();
    }
}
