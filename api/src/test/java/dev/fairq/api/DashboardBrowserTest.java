package dev.fairq.api;

import dev.fairq.schema.DashboardStore;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The dashboards in a real headless Chromium (Debian's chromium + chromium-driver): a tenant signs in with
 * its key, watches a job appear and finish, replays a dead job from the page after its cause is fixed; the
 * admin overview shows the flooding tenant highlighted. Screenshots go to target/ for review. Without a
 * browser the test is skipped, and says why.
 */
class DashboardBrowserTest {
    static TestApp app;
    static WebDriverClient browser;

    @BeforeAll
    static void start() throws Exception {
        String[] found = WebDriverClient.findBrowser();
        Assumptions.assumeTrue(found != null, "SKIPPED: no headless browser: install Debian's chromium and "
                + "chromium-driver (apt-get install -y chromium chromium-driver), or set FAIRQ_CHROMIUM and FAIRQ_CHROMEDRIVER");
        app = TestApp.get();
        Files.createDirectories(Path.of("target"));
        browser = new WebDriverClient(found[0], found[1], Path.of("target/chromedriver.log"));
    }

    /** Each test signs in its own way: the tab forgets the credential after each, pass or fail. */
    @AfterEach
    void signOutTheTab() {
        if (browser == null) return;
        try {
            browser.script("sessionStorage.clear();");
        } catch (RuntimeException e) {
            // a page of no origin (about:blank) has no sessionStorage: nothing to forget
        }
    }

    @AfterAll
    static void stop() {
        if (browser != null) browser.close();
    }

    private String url(String path) {
        return "http://localhost:" + app.support.getLocalPort() + path;
    }

    private String recentStatus(long id) {
        return browser.script("var tr = document.querySelector('#recent tr[data-job-id=\"" + id + "\"]');"
                + "return tr ? tr.getAttribute('data-status') : null;").asText("");
    }

    /** Opens {@code path} signed in: the credential in the tab's sessionStorage, where the page's sign-in keeps it. */
    private void openSignedIn(String path, String item, String credential) {
        browser.open(url(path));
        browser.script("sessionStorage.setItem('fairq." + item + "', '" + credential + "');");
        browser.open(url(path));
    }

    @Test
    void aTenantWatchesItsJobsAndReplaysADeadOne_andTheAdminSeesTheFlood() throws Exception {
        String tenant = TestApp.uniqueTenant("browser");
        String key = app.newTenantKey(tenant);
        // some history for the charts: jobs that succeed, one that retries, one that dies
        for (int i = 0; i < 6; i++) app.submit(key, "{\"type\": \"record\", \"payload\": {}}");
        app.submit(key, "{\"type\": \"flaky\", \"payload\": {}}");

        browser.open(url("/dashboard"));
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> browser.exists("#key"));
        browser.type("#key", key);
        browser.click("#signin");
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> browser.text("#who").equals(tenant));
        assertTrue(browser.text("#count-pending").contains("pending"));
        // the key stays in this tab's sessionStorage, never in a cookie or the URL
        assertEquals(key, browser.script("return sessionStorage.getItem('fairq.tenantKey')").asText());

        // a job appears (due in 15 s, so the page shows it waiting first, even refreshing slowly) and finishes
        long job = app.submit(key, "{\"type\": \"record\", \"payload\": {\"hello\": \"dashboard\"}, \"delay_ms\": 15000}");
        await().atMost(Duration.ofSeconds(15)).ignoreExceptions().until(() -> recentStatus(job).equals("pending"));
        await().atMost(Duration.ofSeconds(45)).ignoreExceptions().until(() -> recentStatus(job).equals("succeeded"));

        // a job dies; the page lists it with its error; the cause is fixed; Replay from the page; it succeeds
        String cause = "cause-" + tenant;
        long dead = app.submit(key, "{\"type\": \"fixable\", \"payload\": {\"k\": \"" + cause + "\"}}");
        String button = "#dead button.replay[data-id=\"" + dead + "\"]";
        await().atMost(Duration.ofSeconds(30)).ignoreExceptions().until(() -> browser.exists(button));
        assertTrue(browser.text("#dead tr[data-job-id=\"" + dead + "\"]").contains("not fixed yet: " + cause));
        new DashboardStore().rollupMinutes(app.db.dsl(), 2); // the charts' next point now rather than within 10 s
        await().atMost(Duration.ofSeconds(15)).ignoreExceptions().until(() -> browser.exists("#chart-throughput path[data-series=succeeded]"));
        browser.screenshot(Path.of("target/dashboard-tenant-dead.png"));

        TestApp.FIXED.add(cause);
        browser.click(button);
        // the page says what the replay did, and the refresh it triggers does not write over it
        await().atMost(Duration.ofSeconds(10)).ignoreExceptions().until(() -> browser.text("#notice").startsWith("job " + dead + " replayed"));
        await().atMost(Duration.ofSeconds(30)).ignoreExceptions().until(() -> recentStatus(dead).equals("succeeded"));
        assertTrue(browser.text("#notice").startsWith("job " + dead + " replayed"), browser.text("#notice"));
        await().atMost(Duration.ofSeconds(15)).ignoreExceptions().until(() -> !browser.exists(button));
        assertEquals("succeeded", app.call("GET", "/v1/jobs/" + dead, key, null).body().get("status").asText());
        new DashboardStore().rollupMinutes(app.db.dsl(), 2);
        String updated = browser.text("#updated");
        await().atMost(Duration.ofSeconds(10)).ignoreExceptions().until(() -> !browser.text("#updated").equals(updated)
                && browser.text("#success-rate").contains("%"));
        browser.screenshot(Path.of("target/dashboard-tenant.png"));

        // the admin overview: a tenant floods the queue with 80 jobs of 250 ms while the quiet tenant has two;
        // the flooder takes most of the worker time, far beyond its weight share, and its row is highlighted
        String flood = TestApp.uniqueTenant("flood");
        String floodKey = app.newTenantKey(flood);
        StringBuilder batch = new StringBuilder("{\"jobs\": [");
        for (int i = 0; i < 80; i++) batch.append(i == 0 ? "" : ",").append("{\"type\": \"sleep\", \"payload\": {\"ms\": 250}}");
        assertEquals(201, app.call("POST", "/v1/jobs/batch", floodKey, batch.append("]}").toString()).status());
        for (int i = 0; i < 2; i++) app.submit(key, "{\"type\": \"sleep\", \"payload\": {\"ms\": 250}}");
        await().atMost(Duration.ofSeconds(60)).until(() -> app.db.dsl().fetchCount(app.db.dsl().selectOne().from("jobs")
                .where("tenant_id = ? AND status = 'succeeded'", flood)) >= 24);
        new DashboardStore().rollupMinutes(app.db.dsl(), 2);

        browser.open(url("/dashboard/admin"));
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> browser.exists("#key"));
        browser.type("#key", TestApp.ADMIN_TOKEN);
        browser.click("#signin");
        String floodRow = "#tenants tr[data-tenant=\"" + flood + "\"]";
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> browser.exists(floodRow));
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> browser.exists(floodRow + ".noisy"));
        // the admin edits the flooder's limits from the page (PATCH /v1/admin/tenants/{id})
        browser.click(floodRow + " button.edit-limits");
        browser.script("var f = document.getElementById('edit-form'); f.elements.max_running.value = '2';");
        browser.click("#edit-save");
        await().atMost(Duration.ofSeconds(10)).ignoreExceptions().until(() -> browser.text("#edit-result").startsWith("saved"));
        assertEquals(2, app.admin("GET", "/v1/admin/tenants/" + flood, null).body().get("max_running").asInt());
        await().atMost(Duration.ofSeconds(10)).ignoreExceptions().until(() -> browser.text(floodRow).contains("/ 2"));
        browser.screenshot(Path.of("target/dashboard-admin.png"));

        // leave no backlog of sleeping jobs behind for the tests that follow (and the JVM's shutdown)
        assertEquals(200, app.admin("PATCH", "/v1/admin/tenants/" + flood, "{\"paused\": true}").status());
        await().atMost(Duration.ofSeconds(30)).until(() -> app.db.dsl().fetchCount(app.db.dsl().selectOne().from("jobs")
                .where("tenant_id = ? AND status IN ('ready', 'running')", flood)) == 0);
    }

    /**
     * Any tenant's limits can be edited from the admin page, whatever values the API allowed: rate_per_second is
     * any positive number, but the form's input said min="0.001", so for a tenant at 0.0005 jobs/s the browser
     * refused the whole form (even a pause, with no word on the page) and nothing was saved.
     */
    @Test
    void anAdminPausesATenantWhoseRateIsBelowAThousandthFromThePage() throws Exception {
        String tenant = TestApp.uniqueTenant("slow");
        assertEquals(201, app.admin("PUT", "/v1/admin/tenants/" + tenant, "{\"rate_per_second\": 0.0005}").status());
        openSignedIn("/dashboard/admin", "adminToken", TestApp.ADMIN_TOKEN);
        pauseFromTheAdminPage(tenant);
        com.fasterxml.jackson.databind.JsonNode stored = app.admin("GET", "/v1/admin/tenants/" + tenant, null).body();
        assertTrue(stored.get("paused").asBoolean(), stored.toString());
        assertEquals(0.0005, stored.get("rate_per_second").asDouble(), stored.toString());
    }

    private void pauseFromTheAdminPage(String tenant) {
        String row = searchAdminPage(tenant);
        browser.click(row + " button.edit-limits");
        browser.click("#edit-form input[name=paused]");
        browser.click("#edit-save");
        await().atMost(Duration.ofSeconds(10)).ignoreExceptions().until(() -> browser.text("#edit-result").startsWith("saved"));
    }

    /**
     * A page past the end moves back to the last page: the admin was on the second page of 51 tenants when one of
     * them went away (here deleted; more often idle tenants leaving the active list), and the pager read "51-50 of 50"
     * over an empty table.
     */
    @Test
    void aPagePastTheEndMovesBackToTheLastPage() {
        String prefix = TestApp.uniqueTenant("pager");
        for (int i = 0; i < 51; i++) {
            assertEquals(201, app.admin("PUT", "/v1/admin/tenants/" + prefix + "-" + i, "{}").status());
        }
        openSignedIn("/dashboard/admin", "adminToken", TestApp.ADMIN_TOKEN);
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> browser.exists("#search"));
        browser.script("document.getElementById('search').value = '" + prefix + "';");
        browser.click("#search-form button[type=submit]");
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> browser.text("#page-info").startsWith("1-50 of 51"));
        browser.click("#page-next");
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> browser.text("#page-info").startsWith("51-51 of 51"));

        String gone = prefix + "-7"; // any one of them: the second page is then past the end
        app.db.dsl().execute("DELETE FROM tenant_audit WHERE tenant_id = ?", gone);
        app.db.dsl().execute("DELETE FROM tenants WHERE id = ?", gone);
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> browser.text("#page-info").startsWith("1-50 of 50"));
        assertEquals(50, browser.script("return document.querySelectorAll('#tenants tr[data-tenant]').length").asInt());
    }

    /**
     * Both pages load, signed out and signed in, with nothing in the console: the browser asked for /favicon.ico,
     * which the platform does not serve, and logged the 404 as an error (on a browser's first page of the site: it
     * remembers a missing icon, hence a browser of this test's own).
     */
    @Test
    void thePagesLoadWithoutConsoleErrors() throws Exception {
        String tenant = TestApp.uniqueTenant("console");
        String key = app.newTenantKey(tenant);
        String[] found = WebDriverClient.findBrowser();
        try (WebDriverClient fresh = new WebDriverClient(found[0], found[1], Path.of("target/chromedriver-console.log"))) {
            for (String[] p : new String[][]{{"/dashboard", "fairq.tenantKey", key}, {"/dashboard/admin", "fairq.adminToken", TestApp.ADMIN_TOKEN}}) {
                fresh.open(url(p[0]));
                await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> fresh.exists("#key"));
                fresh.script("sessionStorage.setItem('" + p[1] + "', '" + p[2] + "');");
                fresh.open(url(p[0])); // signed in: the page fetches its figures
                await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> fresh.text("#updated").startsWith("updated"));
                // an error comes within moments of the load (the icon is asked for right after it); none may come
                List<String> errors = new java.util.ArrayList<>();
                try {
                    await().during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(10))
                            .until(() -> { errors.addAll(fresh.severeLog()); return errors.isEmpty(); });
                } catch (org.awaitility.core.ConditionTimeoutException e) {
                    // an error came: named below
                }
                assertEquals(List.of(), errors, p[0]);
            }
        }
    }

    /**
     * A small rate is shown as it is: numbers were rounded to two decimals, so a tenant limited to 0.0005 jobs/s
     * showed a rate_per_second of 0 (nothing may start) on both pages.
     */
    @Test
    void aRateBelowOneHundredthIsNotShownAsZero() {
        String tenant = TestApp.uniqueTenant("tiny");
        String key = app.newTenantKey(tenant);
        assertEquals(200, app.admin("PATCH", "/v1/admin/tenants/" + tenant, "{\"rate_per_second\": 0.0005}").status());
        browser.open(url("/dashboard"));
        browser.script("sessionStorage.setItem('fairq.tenantKey', '" + key + "');"
                + "sessionStorage.setItem('fairq.adminToken', '" + TestApp.ADMIN_TOKEN + "');");
        browser.open(url("/dashboard"));
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> browser.text("#who").equals(tenant));
        assertTrue(browser.text("#limits").contains("0 / 0.0005"), browser.text("#limits"));

        browser.open(url("/dashboard/admin"));
        String row = searchAdminPage(tenant);
        assertTrue(browser.text(row).contains("0 / 0.0005"), browser.text(row));
    }

    /**
     * A sign-out takes the tenant's figures off the page, and an answer for the signed-out key that comes late is
     * not drawn: the figures stayed in the page after a sign-out (hidden, not gone: the next person at the tab, its
     * developer tools), and a slow answer for the first key, come after a second key had signed in, was drawn over
     * the second tenant's page (the first tenant's name and jobs) until the next refresh.
     */
    @Test
    void aSignOutTakesTheFiguresOffThePageAndALateAnswerForTheOldKeyIsNotDrawn() {
        String first = TestApp.uniqueTenant("left"), second = TestApp.uniqueTenant("next");
        String firstKey = app.newTenantKey(first), secondKey = app.newTenantKey(second);
        openSignedIn("/dashboard", "tenantKey", firstKey);
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> browser.text("#who").equals(first));
        browser.click("#signout");
        assertFalse(browser.script("return document.body.textContent").asText().contains(first));

        // the server answers the first key 3 s late; meanwhile it signs out and the second key signs in
        browser.script("window.__late = null; var f = window.fetch; window.fetch = function (u, o) {"
                + " if (o.headers.Authorization !== 'Bearer " + firstKey + "') return f(u, o);"
                + " return new Promise(function (res, rej) {"
                + "  var t = setTimeout(function () { f(u, o).then(function (r) { window.__late = 'answered'; res(r); }, rej); }, 3000);"
                + "  if (o.signal) o.signal.addEventListener('abort', function () {"
                + "   clearTimeout(t); window.__late = 'aborted'; rej(new DOMException('aborted', 'AbortError')); }); }); };"
                + "window.__who = []; var who = document.getElementById('who');"
                + "new MutationObserver(function () { window.__who.push(who.textContent); })"
                + " .observe(who, {childList: true, characterData: true, subtree: true});"
                + "var k = document.getElementById('key');"
                + "k.value = '" + firstKey + "'; document.getElementById('signin').click();"
                + "document.getElementById('signout').click();"
                + "k.value = '" + secondKey + "'; document.getElementById('signin').click();");
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> browser.text("#who").equals(second));
        await().atMost(Duration.ofSeconds(20)).until(() -> !browser.script("return window.__late").isNull());
        // drawn, it would show at once and stay until the next refresh, 3 s later
        await().alias("#who never names the signed-out tenant").during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(10))
                .until(() -> !browser.script("return window.__who").toString().contains(first));
        assertEquals(second, browser.text("#who"));
    }

    /**
     * A server that does not answer: the page says so within seconds and carries on, and clicks meanwhile do not
     * pile up requests. A refresh had no time limit, and the next one was scheduled only once it had ended, so a
     * server that held the connection (stopped, or a proxy in front of it) left the last figures up, "updated" at
     * their time, with no word and no further refresh; each Search or page click sent one more request.
     */
    @Test
    void aServerThatDoesNotAnswerIsNamedOnThePageAndClicksDoNotPileUpRequests() {
        openSignedIn("/dashboard/admin", "adminToken", TestApp.ADMIN_TOKEN);
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> browser.text("#updated").startsWith("updated"));
        // from here the server holds every request of the page without answering
        browser.script("window.__out = 0; window.__most = 0; var f = window.fetch; window.fetch = function (u, o) {"
                + " if (!window.__hang) return f(u, o);"
                + " window.__out++; window.__most = Math.max(window.__most, window.__out);"
                + " return new Promise(function (res, rej) {"
                + "  if (o.signal) o.signal.addEventListener('abort', function () {"
                + "   window.__out--; rej(new DOMException('aborted', 'AbortError')); }); }); };"
                + "window.__hang = true;");
        for (int i = 0; i < 5; i++) browser.click("#search-form button[type=submit]");
        assertEquals(1, browser.script("return window.__out").asInt());
        await().atMost(Duration.ofSeconds(30)).ignoreExceptions()
                .until(() -> browser.text("#error").contains("no answer within"));
        assertEquals(1, browser.script("return window.__most").asInt());
        browser.script("window.__hang = false;"); // it answers again: the page recovers by itself
        await().atMost(Duration.ofSeconds(30)).ignoreExceptions().until(() -> browser.text("#error").isEmpty());
    }

    /**
     * A tenant whose API limit allows one request at once sees its dashboard: the page asked for its figures and its
     * recent jobs in two requests at once, so with an api_burst of 1 the second was a 429 at every refresh and the
     * page only ever said "could not refresh: ... over its API request limit". The recent jobs now come with the
     * figures, one request a refresh.
     */
    @Test
    void aTenantWithAnApiBurstOfOneSeesItsDashboard() {
        String tenant = TestApp.uniqueTenant("burst1");
        String key = app.newTenantKey(tenant);
        long job = app.submit(key, "{\"type\": \"record\", \"payload\": {}}");
        assertEquals(200, app.admin("PATCH", "/v1/admin/tenants/" + tenant, "{\"api_burst\": 1, \"api_rate_per_second\": 1}").status());
        openSignedIn("/dashboard", "tenantKey", key);
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> browser.text("#who").equals(tenant)
                && !recentStatus(job).isEmpty() && browser.text("#updated").startsWith("updated"));
        assertEquals("", browser.text("#error"));
    }

    /**
     * The charts' time axis reads as times: it showed the first five characters of the locale's time, "6:21:" in
     * a 12-hour locale (Chromium's default en-US), with no AM or PM.
     */
    @Test
    void theChartsTimeAxisShowsHoursAndMinutes() {
        String tenant = TestApp.uniqueTenant("axis");
        String key = app.newTenantKey(tenant);
        openSignedIn("/dashboard", "tenantKey", key);
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> browser.text("#who").equals(tenant));
        // the three time labels under each chart (the others are the y axis), and whether this locale says AM/PM
        com.fasterxml.jackson.databind.JsonNode labels = browser.script("var out = [];"
                + "document.querySelectorAll('.chart svg').forEach(function (s) {"
                + " var t = s.querySelectorAll('text'); for (var i = t.length - 3; i < t.length; i++) out.push(t[i].textContent); });"
                + "return {labels: out, twelve: /[AP]M/.test(new Date().toLocaleTimeString())};");
        assertEquals(6, labels.get("labels").size(), labels.toString());
        String format = labels.get("twelve").asBoolean() ? "\\d{1,2}:\\d{2}\\h[AP]M" : "\\d{1,2}:\\d{2}";
        for (com.fasterxml.jackson.databind.JsonNode l : labels.get("labels")) {
            assertTrue(l.asText().matches(format), labels.toString());
        }
    }

    /**
     * A search that no tenant id can start with empties the table: the server refuses it (422: ids are lower-case
     * letters, digits, '_' and '-'), and the page kept the previous search's rows, and its "1-1 of 1" pager, under
     * the new search text, as if they matched it.
     */
    @Test
    void aSearchNoTenantIdCanStartWithShowsNoTenants() {
        String tenant = TestApp.uniqueTenant("typo");
        assertEquals(201, app.admin("PUT", "/v1/admin/tenants/" + tenant, "{}").status());
        openSignedIn("/dashboard/admin", "adminToken", TestApp.ADMIN_TOKEN);
        String row = searchAdminPage(tenant);

        browser.script("document.getElementById('search').value = '" + tenant + " corp';");
        browser.click("#search-form button[type=submit]");
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions()
                .until(() -> browser.text("#error").contains("must be the start of a tenant id"));
        await().atMost(Duration.ofSeconds(10)).ignoreExceptions().until(() -> !browser.exists(row));
        assertTrue(browser.text("#tenants").contains("no tenant id can start with"), browser.text("#tenants"));
        assertEquals("", browser.text("#page-info"));
    }

    /**
     * Each row's button and each chart has a name of its own for a screen reader: the rows' buttons were all
     * "Edit limits" (or "Replay"), whichever tenant or job they were for, and the charts (role img) had none.
     */
    @Test
    void rowButtonsAndChartsHaveNamesOfTheirOwn() {
        String tenant = TestApp.uniqueTenant("named");
        String key = app.newTenantKey(tenant);
        browser.open(url("/dashboard"));
        browser.script("sessionStorage.setItem('fairq.tenantKey', '" + key + "');"
                + "sessionStorage.setItem('fairq.adminToken', '" + TestApp.ADMIN_TOKEN + "');");
        browser.open(url("/dashboard"));
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> browser.text("#who").equals(tenant));
        assertTrue(browser.label("#chart-depth svg").startsWith("Queue depth, last hour: pending"), browser.label("#chart-depth svg"));
        assertTrue(browser.label("#chart-throughput svg").startsWith("Throughput per minute, last hour: started 0"),
                browser.label("#chart-throughput svg"));

        browser.open(url("/dashboard/admin"));
        String button = searchAdminPage(tenant) + " button.edit-limits";
        assertEquals("Edit limits of " + tenant, browser.label(button));
    }

    /**
     * A dead-letter queue longer than the page's list says so: the list holds the newest 50, and with 51 dead jobs
     * the page showed "51" on the card over 50 rows, with no word of the one missing (nor of the way to all of them).
     */
    @Test
    void aDeadLetterQueueLongerThanItsListSaysHowManyItHolds() {
        String tenant = TestApp.uniqueTenant("dead51");
        String key = app.newTenantKey(tenant);
        StringBuilder batch = new StringBuilder("{\"jobs\": [");
        for (int i = 0; i < 51; i++) batch.append(i == 0 ? "" : ",").append("{\"type\": \"sleep\", \"payload\": {\"ms\": \"no\"}}");
        assertEquals(201, app.call("POST", "/v1/jobs/batch", key, batch.append("]}").toString()).status());
        await().atMost(Duration.ofSeconds(60)).until(() -> app.db.dsl().fetchCount(app.db.dsl().selectOne().from("jobs")
                .where("tenant_id = ? AND status = 'dead'", tenant)) == 51);
        openSignedIn("/dashboard", "tenantKey", key);
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> browser.text("#who").equals(tenant)
                && browser.text("#count-dead").startsWith("51"));
        assertEquals(50, browser.script("return document.querySelectorAll('#dead tr[data-job-id]').length").asInt());
        assertEquals("the newest 50 of 51 dead jobs (all of them: GET /v1/jobs?status=dead)", browser.text("#dead-more"));
    }

    /**
     * A key pasted with a character no key has (a '…' copied from a document) is refused at sign-in, naming the
     * character: the browser cannot send it in a header, so every refresh failed with "Failed to execute 'fetch' on
     * 'Window': ... non ISO-8859-1 code point", on an empty page that looked signed in, and never signed out.
     */
    @Test
    void aKeyWithACharacterNoKeyHasIsRefusedAtSignIn() {
        browser.open(url("/dashboard"));
        browser.script("sessionStorage.clear();");
        browser.open(url("/dashboard"));
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> browser.exists("#key"));
        browser.script("document.getElementById('key').value = 'fqk_abc\\u2026';");
        browser.click("#signin");
        await().atMost(Duration.ofSeconds(10)).ignoreExceptions().until(() -> browser.text("#signin-error").contains("U+2026"));
        assertTrue(browser.script("return document.getElementById('dash').hidden").asBoolean());
        assertTrue(browser.script("return sessionStorage.getItem('fairq.tenantKey') === null").asBoolean());
    }

    /**
     * The keyboard stays where it is through the refresh, Edit limits takes it to the form, and Close brings it back
     * to the row: the redraw every 3 s replaced the row's button a keyboard user was on and the focus fell to the
     * page's start; the form is under the table, so a keyboard user tabbed past every row's buttons to reach it.
     */
    @Test
    void theKeyboardFocusSurvivesTheRefreshAndGoesToTheEditFormAndBack() {
        String tenant = TestApp.uniqueTenant("keys");
        assertEquals(201, app.admin("PUT", "/v1/admin/tenants/" + tenant, "{}").status());
        openSignedIn("/dashboard/admin", "adminToken", TestApp.ADMIN_TOKEN);
        String button = searchAdminPage(tenant) + " button.edit-limits";
        String focusedRow = "var a = document.activeElement;"
                + "return a.classList.contains('edit-limits') ? a.getAttribute('data-tenant') : a.tagName";
        browser.script("document.querySelector('" + button + "').focus();");
        assertEquals(tenant, browser.script(focusedRow).asText());
        String updated = browser.text("#updated");
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> !browser.text("#updated").equals(updated));
        assertEquals(tenant, browser.script(focusedRow).asText()); // redrawn, and still on its row's button

        browser.click(button);
        assertEquals("weight", browser.script("return document.activeElement.name").asText());
        browser.click("#edit-cancel");
        assertEquals(tenant, browser.script(focusedRow).asText());
    }

    /**
     * A tenant over its share that the admin paused says so on its row: the over-share badge took the place of the
     * "(paused)" mark, so the flooder just paused (the usual answer to a red row) stayed a red row with no sign of
     * the pause for as long as its last five minutes of worker time kept it over its share.
     */
    @Test
    void aPausedTenantOverItsShareIsMarkedPausedToo() {
        String run = TestApp.uniqueTenant("hog");
        String hog = run + "-hog", meek = run + "-meek";
        for (String t : List.of(hog, meek)) app.db.createTenant(t);
        // three minutes ago: in the overview's five, and before the minutes the scheduler's rollup recounts
        app.db.dsl().execute("INSERT INTO tenant_minute_stats (tenant_id, minute, started, succeeded, failed, dead, busy_ms) "
                + "VALUES (?, date_trunc('minute', now()) - interval '3 minutes', 100, 100, 0, 0, 100000000), "
                + "(?, date_trunc('minute', now()) - interval '3 minutes', 1, 1, 0, 0, 100)", hog, meek);
        try {
            assertEquals(200, app.admin("PATCH", "/v1/admin/tenants/" + hog, "{\"paused\": true}").status());
            openSignedIn("/dashboard/admin", "adminToken", TestApp.ADMIN_TOKEN);
            await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> browser.exists("#search"));
            browser.script("document.getElementById('search').value = '" + hog + "';");
            browser.click("#search-form button[type=submit]");
            String row = "#tenants tr[data-tenant=\"" + hog + "\"]";
            await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> browser.exists(row + ".noisy"));
            String name = browser.text(row + " td:first-child");
            assertTrue(name.contains("over its share") && name.contains("(paused)"), name);
        } finally {
            app.db.dsl().execute("DELETE FROM tenant_minute_stats WHERE tenant_id IN (?, ?)", hog, meek);
        }
    }

    /**
     * After a save the form shows the tenant as stored, so the next save sends only what the admin changed: the form
     * kept what it was opened with, and a tenant paused elsewhere in between (another admin, the API) was unpaused
     * by the admin's second save, of another field, because the form's unticked box now differed from the stored pause.
     */
    @Test
    void aSecondSaveDoesNotUndoAChangeMadeElsewhereWhileTheFormWasOpen() {
        String tenant = TestApp.uniqueTenant("twice");
        assertEquals(201, app.admin("PUT", "/v1/admin/tenants/" + tenant, "{}").status());
        openSignedIn("/dashboard/admin", "adminToken", TestApp.ADMIN_TOKEN);
        String button = searchAdminPage(tenant) + " button.edit-limits";
        browser.click(button);

        assertEquals(200, app.admin("PATCH", "/v1/admin/tenants/" + tenant, "{\"paused\": true}").status()); // elsewhere
        browser.script("document.getElementById('edit-form').elements.max_running.value = '7';");
        browser.click("#edit-save");
        await().atMost(Duration.ofSeconds(10)).ignoreExceptions().until(() -> browser.text("#edit-result").startsWith("saved"));
        browser.script("document.getElementById('edit-result').textContent = '';"
                + "document.getElementById('edit-form').elements.weight.value = '3';");
        browser.click("#edit-save");
        await().atMost(Duration.ofSeconds(10)).ignoreExceptions().until(() -> browser.text("#edit-result").startsWith("saved"));

        com.fasterxml.jackson.databind.JsonNode stored = app.admin("GET", "/v1/admin/tenants/" + tenant, null).body();
        assertEquals(3, stored.get("weight").asInt(), stored.toString());
        assertEquals(7, stored.get("max_running").asInt(), stored.toString());
        assertTrue(stored.get("paused").asBoolean(), "unpaused by a save that did not touch the pause: " + stored);
        assertTrue(browser.script("return document.getElementById('edit-form').elements.paused.checked").asBoolean(),
                "the form shows the tenant as stored: paused");
    }

    /**
     * From the moment this is run, every request of the page gets {@code response} (a JS expression making a
     * Response), and window.__calls holds each request's time (ms since the page loaded).
     */
    private void answerEveryRequestWith(String response) {
        browser.script("window.__calls = []; window.fetch = function () {"
                + " window.__calls.push(performance.now()); return Promise.resolve(" + response + "); };");
    }

    /**
     * A proxy's error page is named by its status: the page had put the whole HTML document (its markup as text)
     * into the error line. When the server answers again the line clears by itself.
     */
    @Test
    void aProxysErrorPageIsNamedByItsStatusNotShownWhole() {
        openSignedIn("/dashboard/admin", "adminToken", TestApp.ADMIN_TOKEN);
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> browser.text("#updated").startsWith("updated"));
        browser.script("window.__real = window.fetch;");
        answerEveryRequestWith("new Response('<html><head><title>502 Bad Gateway</title></head><body><center>"
                + "<h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>',"
                + " {status: 502, statusText: 'Bad Gateway', headers: {'Content-Type': 'text/html'}})");
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> !browser.text("#error").isEmpty());
        assertEquals("could not refresh: HTTP 502 Bad Gateway: the answer is not from fairq (a proxy in between?)",
                browser.text("#error"));
        browser.script("window.fetch = window.__real;");
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> browser.text("#error").isEmpty());
    }

    /**
     * A refused refresh waits as long as the 429's Retry-After says (the page asked again every 3 s, each refused),
     * says when it will try again, and a failure that goes on is written to the alert line once: the page rewrote
     * it at every refresh, and a screen reader announces a role="alert" line at each write, the same words too.
     */
    @Test
    void aRefusedRefreshWaitsForItsRetryAfterAndAnUnchangedErrorIsAnnouncedOnce() {
        openSignedIn("/dashboard/admin", "adminToken", TestApp.ADMIN_TOKEN);
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> browser.text("#updated").startsWith("updated"));
        browser.script("window.__writes = 0; new MutationObserver(function (m) { window.__writes += m.length; })"
                + ".observe(document.getElementById('error'), {childList: true, characterData: true, subtree: true});");
        answerEveryRequestWith("new Response(JSON.stringify({error: 'down for a moment'}), {status: 500,"
                + " headers: {'Content-Type': 'application/json'}})");
        await().atMost(Duration.ofSeconds(30)).ignoreExceptions().until(() -> browser.script("return window.__calls.length").asInt() >= 3);
        assertEquals("could not refresh: down for a moment", browser.text("#error"));
        assertEquals(1, browser.script("return window.__writes").asInt(), "three failed refreshes, one write");

        answerEveryRequestWith("new Response(JSON.stringify({error: 'over its API request limit'}), {status: 429,"
                + " headers: {'Content-Type': 'application/json', 'Retry-After': '7'}})");
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> browser.script("return window.__calls.length").asInt() >= 2);
        assertEquals("could not refresh: over its API request limit (next try in 7 s)", browser.text("#error"));
        double gap = browser.script("return window.__calls[1] - window.__calls[0]").asDouble();
        assertTrue(gap >= 6900, "the second request came " + gap + " ms after the refused one, before its Retry-After");
    }

    /** On the admin page: searches for the tenant and waits for its row; returns the row's selector. */
    private String searchAdminPage(String tenant) {
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> browser.exists("#search"));
        browser.script("document.getElementById('search').value = '" + tenant + "';");
        browser.click("#search-form button[type=submit]");
        String row = "#tenants tr[data-tenant=\"" + tenant + "\"]";
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> browser.exists(row));
        return row;
    }
}
