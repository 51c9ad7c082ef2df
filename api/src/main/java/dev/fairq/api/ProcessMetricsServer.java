package dev.fairq.api;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * {@code /metrics} and {@code /ping} of a {@code worker} or {@code scheduler} process (FAIRQ_METRICS_PORT), which
 * runs no Jetty: the JDK's HTTP server on one thread, since Prometheus scrapes it every few seconds at most. The
 * server process serves the same {@link FairqMetrics} from Dropwizard's admin port instead; errors have its body.
 */
final class ProcessMetricsServer implements AutoCloseable {
    private final HttpServer http;
    private final ExecutorService thread;

    private ProcessMetricsServer(HttpServer http, ExecutorService thread) {
        this.http = http;
        this.thread = thread;
    }

    /** Listening on {@code host:port} (port 0: any free one) once this returns. */
    static ProcessMetricsServer start(String host, int port, FairqMetrics metrics) throws IOException {
        HttpServer http;
        try {
            http = HttpServer.create(new InetSocketAddress(host, port), 16);
        } catch (BindException e) {
            throw new BindException("FAIRQ_METRICS_PORT " + port + " on " + host + ": " + e.getMessage());
        }
        PrometheusTextFormatWriter writer = PrometheusTextFormatWriter.create();
        http.createContext("/", exchange -> {
            try (exchange) {
                String path = exchange.getRequestURI().getPath();
                boolean known = path.equals("/metrics") || path.equals("/ping");
                String method = exchange.getRequestMethod();
                if (!known) {
                    send(exchange, 404, "application/json", JsonErrorHandlers.body(404, null));
                } else if (!method.equals("GET") && !method.equals("HEAD")) {
                    exchange.getResponseHeaders().set("Allow", "GET, HEAD");
                    send(exchange, 405, "application/json", JsonErrorHandlers.body(405, null));
                } else if (path.equals("/ping")) {
                    send(exchange, 200, "text/plain; charset=utf-8", "pong\n");
                } else {
                    ByteArrayOutputStream out = new ByteArrayOutputStream();
                    writer.write(out, metrics.scrape());
                    send(exchange, 200, writer.getContentType(), out.toByteArray());
                }
            }
        });
        ExecutorService thread = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "fairq-metrics-http");
            t.setDaemon(true);
            return t;
        });
        http.setExecutor(thread);
        http.start();
        return new ProcessMetricsServer(http, thread);
    }

    int port() {
        return http.getAddress().getPort();
    }

    private static void send(HttpExchange exchange, int status, String type, String body) throws IOException {
        send(exchange, status, type, body.getBytes(StandardCharsets.UTF_8));
    }

    private static void send(HttpExchange exchange, int status, String type, byte[] body) throws IOException {
        exchange.getResponseHeaders().set("Content-Type", type);
        boolean head = exchange.getRequestMethod().equals("HEAD");
        exchange.sendResponseHeaders(status, head ? -1 : body.length);
        if (!head) {
            try (OutputStream os = exchange.getResponseBody()) {
                os.write(body);
            }
        }
    }

    @Override
    public void close() {
        http.stop(0);
        thread.shutdownNow();
    }
}
