package dev.fairq.api;

import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import java.io.IOException;

/** Prometheus text format at /metrics on the admin port. */
final class PrometheusServlet extends HttpServlet {
    private final transient FairqMetrics metrics;
    private final transient PrometheusTextFormatWriter writer = PrometheusTextFormatWriter.create();

    PrometheusServlet(FairqMetrics metrics) {
        this.metrics = metrics;
    }

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        resp.setStatus(200);
        resp.setContentType(writer.getContentType());
        writer.write(resp.getOutputStream(), metrics.scrape());
    }
}
