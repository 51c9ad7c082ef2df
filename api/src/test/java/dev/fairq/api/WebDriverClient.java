package dev.fairq.api;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.File;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

import static org.awaitility.Awaitility.await;

/**
 * A minimal W3C WebDriver client for chromedriver over java.net.http and the Jackson the project already has.
 * Chosen over Selenium: the tests need a dozen commands (navigate, find, click, type, text, script,
 * screenshot), and selenium-java would bring some thirty jars (its own Guava, OpenTelemetry, Netty-era
 * HTTP stack) onto a test classpath that Dropwizard pins to other versions of some of them.
 */
final class WebDriverClient implements AutoCloseable {
    private static final String ELEMENT = "element-6066-11e4-a52e-4f735466cecf";
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Process driver;
    private final Path profile;
    private final String base;
    private final String session;
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();

    /** The browser and driver to use: FAIRQ_CHROMIUM / FAIRQ_CHROMEDRIVER, else Debian's paths; null if absent. */
    static String[] findBrowser() {
        String chromium = firstExisting(System.getenv("FAIRQ_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser");
        String driver = firstExisting(System.getenv("FAIRQ_CHROMEDRIVER"), "/usr/bin/chromedriver");
        return chromium == null || driver == null ? null : new String[]{chromium, driver};
    }

    private static String firstExisting(String... paths) {
        for (String p : paths) if (p != null && new File(p).canExecute()) return p;
        return null;
    }

    WebDriverClient(String chromium, String chromedriver, Path logFile) throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        base = "http://127.0.0.1:" + port;
        driver = new ProcessBuilder(chromedriver, "--port=" + port)
                .redirectErrorStream(true).redirectOutput(logFile.toFile()).start();
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100)).ignoreExceptions()
                .until(() -> send("GET", "/status", null).path("value").path("ready").asBoolean());
        profile = Files.createTempDirectory("fairq-chromium-profile");
        ObjectNode caps = JSON.createObjectNode();
        ObjectNode match = caps.putObject("capabilities").putObject("alwaysMatch").put("browserName", "chrome");
        match.putObject("goog:loggingPrefs").put("browser", "ALL"); // the console, for severeLog()
        ObjectNode options = match.putObject("goog:chromeOptions");
        options.put("binary", chromium);
        ArrayNode args = options.putArray("args");
        for (String a : List.of("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
                "--user-data-dir=" + profile, "--window-size=1400,1600")) args.add(a);
        session = send("POST", "/session", caps).path("value").path("sessionId").asText();
        if (session.isEmpty()) throw new IllegalStateException("chromedriver gave no session");
    }

    private JsonNode send(String method, String path, JsonNode body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(60))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body)));
        if (body != null) b.header("Content-Type", "application/json; charset=utf-8");
        HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
        JsonNode out = JSON.readTree(r.body());
        if (r.statusCode() >= 400) {
            throw new IllegalStateException("WebDriver " + method + " " + path + ": " + out.path("value").path("message").asText(r.body()));
        }
        return out;
    }

    private JsonNode cmd(String method, String path, JsonNode body) {
        try {
            return send(method, "/session/" + session + path, body).path("value");
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    void open(String url) {
        cmd("POST", "/url", JSON.createObjectNode().put("url", url));
    }

    /** Elements matching a CSS selector (empty when none). */
    List<String> findAll(String css) {
        List<String> ids = new ArrayList<>();
        for (JsonNode e : cmd("POST", "/elements", JSON.createObjectNode().put("using", "css selector").put("value", css))) {
            ids.add(e.get(ELEMENT).asText());
        }
        return ids;
    }

    String find(String css) {
        List<String> all = findAll(css);
        if (all.isEmpty()) throw new IllegalStateException("no element " + css);
        return all.get(0);
    }

    boolean exists(String css) {
        return !findAll(css).isEmpty();
    }

    void type(String css, String text) {
        cmd("POST", "/element/" + find(css) + "/value", JSON.createObjectNode().put("text", text));
    }

    void click(String css) {
        cmd("POST", "/element/" + find(css) + "/click", JSON.createObjectNode());
    }

    String text(String css) {
        return cmd("GET", "/element/" + find(css) + "/text", null).asText();
    }

    /** The element's accessible name, as the browser computes it for a screen reader. */
    String label(String css) {
        return cmd("GET", "/element/" + find(css) + "/computedlabel", null).asText();
    }

    JsonNode script(String js) {
        ObjectNode body = JSON.createObjectNode().put("script", js);
        body.putArray("args");
        return cmd("POST", "/execute/sync", body);
    }

    /** The console's errors (failed loads included) since the last call: chromedriver's browser log, SEVERE entries. */
    List<String> severeLog() {
        List<String> out = new ArrayList<>();
        for (JsonNode e : cmd("POST", "/se/log", JSON.createObjectNode().put("type", "browser"))) {
            if (e.path("level").asText().equals("SEVERE")) out.add(e.path("message").asText());
        }
        return out;
    }

    void screenshot(Path to) throws Exception {
        Files.createDirectories(to.toAbsolutePath().getParent());
        Files.write(to, Base64.getDecoder().decode(cmd("GET", "/screenshot", null).asText()));
    }

    @Override
    public void close() {
        try {
            cmd("DELETE", "", null);
        } catch (RuntimeException ignored) {
            // the browser may be gone already
        }
        driver.destroy();
        try {
            if (!driver.waitFor(5, java.util.concurrent.TimeUnit.SECONDS)) driver.destroyForcibly();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try (var files = Files.walk(profile)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (Exception ignored) {
            // a temp directory left behind is harmless
        }
    }
}
