package dev.fairq.api;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A keep-alive connection survives a request refused before its body was read (UnreadBodyFilter). Jetty closed it
 * after the answer without a {@code Connection: close}, so the client's next request on it met a dead socket. Raw
 * HTTP/1.1 on one socket, as a client's connection pool reuses it.
 */
class ConnectionReuseTest extends AppTest {
    static String key;

    @BeforeAll
    static void start() {
        key = app.newTenantKey(TestApp.uniqueTenant("reuse"));
    }

    /** One answer read off the socket: status line and headers (lower-cased names), the body skipped by its length. */
    record Answer(int status, String headers) {}

    private static Answer read(InputStream in) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        int b;
        while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n") && (b = in.read()) >= 0) head.write(b);
        String text = head.toString(StandardCharsets.ISO_8859_1);
        if (!text.endsWith("\r\n\r\n")) throw new IOException("the connection ended before an answer: [" + text + "]");
        String headers = text.toLowerCase(Locale.ROOT);
        java.util.regex.Matcher len = java.util.regex.Pattern.compile("content-length: *(\\d+)").matcher(headers);
        if (len.find()) in.readNBytes(Integer.parseInt(len.group(1)));
        return new Answer(Integer.parseInt(text.substring(9, 12)), headers);
    }

    private static void post(OutputStream out, String token, byte[] body) throws IOException {
        out.write(("POST /v1/jobs HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + token
                + "\r\nContent-Type: application/json\r\nContent-Length: " + body.length + "\r\n\r\n")
                .getBytes(StandardCharsets.ISO_8859_1));
        out.write(body);
        out.flush();
    }

    private static void getStats(OutputStream out) throws IOException {
        out.write(("GET /v1/stats HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + key + "\r\n\r\n")
                .getBytes(StandardCharsets.ISO_8859_1));
        out.flush();
    }

    private static byte[] job(int payloadChars) {
        return ("{\"type\": \"record\", \"payload\": {\"x\": \"" + "a".repeat(payloadChars) + "\"}}")
                .getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void aRefusedRequestsUnreadBodyLeavesTheConnectionUsable() throws Exception {
        try (Socket s = new Socket("localhost", app.support.getLocalPort())) {
            s.setSoTimeout(30_000);
            // 200 KB: more than Jetty reads ahead, refused at authentication before anything reads it
            post(s.getOutputStream(), "fqk_not-a-key", job(200_000));
            Answer refused = read(s.getInputStream());
            assertEquals(401, refused.status(), refused.headers());
            assertFalse(refused.headers().contains("connection: close"), refused.headers());
            getStats(s.getOutputStream());
            assertEquals(200, read(s.getInputStream()).status(), "the next request on the same connection is answered");
            // over the payload limit: a 413, the connection usable as well
            post(s.getOutputStream(), key, job(200_000));
            assertEquals(413, read(s.getInputStream()).status());
            getStats(s.getOutputStream());
            assertEquals(200, read(s.getInputStream()).status());
        }
    }

    /** Past what the filter reads (1 MiB) the answer says the connection closes, so the client knows not to reuse it. */
    @Test
    void aLargerUnreadBodyIsAnsweredWithConnectionClose() throws Exception {
        try (Socket s = new Socket("localhost", app.support.getLocalPort())) {
            s.setSoTimeout(30_000);
            byte[] body = job(UnreadBodyFilter.DRAIN_LIMIT + 100_000);
            Thread writer = new Thread(() -> { // the server may answer and close before the whole body is sent
                try {
                    post(s.getOutputStream(), "fqk_not-a-key", body);
                } catch (IOException ignored) {
                    // closed by the server after its answer: what this test expects
                }
            });
            writer.start();
            Answer refused = read(s.getInputStream());
            writer.join(30_000);
            assertEquals(401, refused.status(), refused.headers());
            assertTrue(refused.headers().contains("connection: close"), refused.headers());
        }
    }
}
