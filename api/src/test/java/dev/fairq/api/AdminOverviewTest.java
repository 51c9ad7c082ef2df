package dev.fairq.api;

import com.fasterxml.jackson.databind.JsonNode;
import dev.fairq.schema.DashboardStore;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The admin overview pages, sorts and searches instead of shipping every tenant: totals over the active
 * tenants, a page sorted by (over its share, then backlog), a search by id prefix that also finds idle
 * tenants, and 422 for a bad page or search. Over real HTTP.
 */
class AdminOverviewTest {
    final TestApp app = TestApp.get();

    AdminOverviewTest() throws Exception {
    }

    @Test
    void aPageIsSortedByBacklogAndASearchFindsIdleTenantsToo() {
        String run = "ov-" + UUID.randomUUID().toString().substring(0, 8);
        int[] backlog = {2, 5, 3};
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < backlog.length; i++) {
            String id = run + "-" + i;
            ids.add(id);
            String key = app.newTenantKey(id);
            for (int j = 0; j < backlog[i]; j++) {
                // due in an hour: they wait, and are the tenant's backlog
                assertEquals(201, app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}, \"delay_ms\": 3600000}").status());
            }
        }
        String idle = run + "-idle";
        assertEquals(201, app.admin("PUT", "/v1/admin/tenants/" + idle, "{}").status());
        new DashboardStore().rollupMinutes(app.db.dsl(), 2); // the scheduler's rollup, now rather than within 10 s

        JsonNode first = app.admin("GET", "/v1/admin/overview?search=" + run + "&limit=2", null).body();
        assertEquals(4, first.get("page").get("total").asInt(), "three with work, one idle");
        assertEquals(2, first.get("tenants").size());
        assertEquals(ids.get(1), first.get("tenants").get(0).get("tenant").asText(), "largest backlog first");
        assertEquals(ids.get(2), first.get("tenants").get(1).get("tenant").asText());
        assertEquals(5, first.get("tenants").get(0).get("counts").get("pending").asInt());
        assertEquals(2, first.get("page").get("next_offset").asInt());

        JsonNode second = app.admin("GET", "/v1/admin/overview?search=" + run + "&limit=2&offset=2", null).body();
        assertEquals(List.of(ids.get(0), idle), List.of(second.get("tenants").get(0).get("tenant").asText(),
                second.get("tenants").get(1).get("tenant").asText()), "then the smaller backlog, then the idle one");
        assertTrue(second.get("page").get("next_offset").isNull());
        // a count of the tenants table up to REGISTERED_COUNT_TTL old: an earlier test's page may have taken it
        // before these four were registered (it failed when this class ran after DashboardApiTest alone)
        long registered = second.get("totals").get("registered_tenants").asLong();
        long inTable = app.db.dsl().fetchCount(app.db.dsl().selectOne().from("tenants"));
        assertTrue(registered >= 1 && registered <= inTable, registered + " of " + inTable);
        assertTrue(second.get("totals").get("active_tenants").asLong() >= 3);

        // without a search: the active tenants only, the idle one is not shipped
        JsonNode all = app.admin("GET", "/v1/admin/overview?limit=500", null).body();
        for (JsonNode t : all.get("tenants")) assertTrue(!t.get("tenant").asText().equals(idle), "idle tenant listed");
    }

    /**
     * A search that matches more tenants than it reads idle ones of (DashboardFigures.MAX_SEARCH_MATCHES, in id
     * order) still lists the active tenants it matches, sorted first by their backlog: the busiest matching
     * tenant had been left out when its id sorted after the first 1,000 matches, and the total stopped at 1,000.
     */
    @Test
    void aSearchMatchingManyIdleTenantsStillListsTheBusyOne() {
        String run = "ovm-" + UUID.randomUUID().toString().substring(0, 8);
        int idle = DashboardFigures.MAX_SEARCH_MATCHES + 1;
        app.db.dsl().execute("INSERT INTO tenants (id) SELECT ? || '-' || lpad(i::text, 5, '0') FROM generate_series(1, ?) i",
                run, idle);
        String busy = run + "-zz";
        String key = app.newTenantKey(busy);
        for (int j = 0; j < 3; j++) {
            assertEquals(201, app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}, \"delay_ms\": 3600000}").status());
        }
        new DashboardStore().rollupMinutes(app.db.dsl(), 2);

        JsonNode page = app.admin("GET", "/v1/admin/overview?search=" + run + "&limit=5", null).body();
        assertEquals(busy, page.get("tenants").get(0).get("tenant").asText(), page.get("tenants").toString());
        assertEquals(3, page.get("tenants").get(0).get("counts").get("pending").asInt());
        assertTrue(page.get("page").get("total").asInt() > DashboardFigures.MAX_SEARCH_MATCHES, page.get("page").toString());
    }

    /**
     * A search lists the first MAX_SEARCH_MATCHES idle tenants it matches, however many active ones sort among them:
     * it read the first 1,000 matching tenants, active or idle, and dropped the active ones, so each active tenant
     * among the first 1,000 ids took an idle one off the list (143 idle tenants of a search over 10,000, where 8,571
     * were active), and the idle tenant that sorted last was on no page.
     */
    @Test
    void aSearchListsAsManyIdleTenantsWhateverActiveOnesSortAmongThem() {
        String run = "ovi-" + UUID.randomUUID().toString().substring(0, 8);
        int busy = 5, idle = DashboardFigures.MAX_SEARCH_MATCHES;
        for (int i = 0; i < busy; i++) {
            String key = app.newTenantKey(run + "-0-" + i); // before the idle ones by id
            assertEquals(201, app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}, \"delay_ms\": 3600000}").status());
        }
        app.db.dsl().execute("INSERT INTO tenants (id) SELECT ? || '-1-' || lpad(i::text, 5, '0') FROM generate_series(1, ?) i",
                run, idle);
        new DashboardStore().rollupMinutes(app.db.dsl(), 2);

        JsonNode first = app.admin("GET", "/v1/admin/overview?search=" + run + "&limit=500", null).body();
        assertEquals(busy + idle, first.get("page").get("total").asInt(), first.get("page").toString());
        for (int i = 0; i < busy; i++) assertTrue(first.get("tenants").get(i).get("active").asBoolean(), first.get("tenants").get(i).toString());
        JsonNode last = app.admin("GET", "/v1/admin/overview?search=" + run + "&limit=1&offset=" + (busy + idle - 1), null).body();
        assertEquals(run + "-1-" + String.format("%05d", idle), last.get("tenants").get(0).get("tenant").asText(), last.toString());
    }

    /**
     * totals are over every active tenant (OverviewTotals' contract), a search or not: over_share_tenants had
     * counted the search's matches only.
     */
    @Test
    void theTotalsDoNotDependOnTheSearch() {
        String run = "ovt-" + UUID.randomUUID().toString().substring(0, 8);
        String hog = run + "-hog", meek = run + "-meek";
        for (String t : List.of(hog, meek)) app.db.createTenant(t);
        // the rollup's rows of the last minute: the hog took 100,000 s of worker time, the meek one 0.1 s
        app.db.dsl().execute("INSERT INTO tenant_minute_stats (tenant_id, minute, started, succeeded, failed, dead, busy_ms) "
                + "VALUES (?, date_trunc('minute', now()) - interval '1 minute', 100, 100, 0, 0, 100000000), "
                + "(?, date_trunc('minute', now()) - interval '1 minute', 1, 1, 0, 0, 100)", hog, meek);
        JsonNode all = app.admin("GET", "/v1/admin/overview?limit=1", null).body().get("totals");
        JsonNode searched = app.admin("GET", "/v1/admin/overview?limit=1&search=" + meek, null).body().get("totals");
        assertTrue(all.get("over_share_tenants").asLong() >= 1, all.toString());
        assertEquals(all.get("over_share_tenants").asLong(), searched.get("over_share_tenants").asLong(), searched.toString());
        assertEquals(all.get("active_tenants").asLong(), searched.get("active_tenants").asLong());
    }

    /**
     * A row's blocked_ordering_keys is its own count whatever other tenants hold: the overview read the first
     * 10,000 blocked keys of all tenants (in tenant id order) and counted the page's among them, so a tenant whose
     * id sorted after 10,000 other blocked keys showed 0.
     */
    @Test
    void aTenantsBlockedKeysAreCountedWhateverOtherTenantsHold() {
        String run = "ovb-" + UUID.randomUUID().toString().substring(0, 8);
        String many = run + "-a", one = run + "-b";
        for (String t : List.of(many, one)) app.db.createTenant(t);
        String deadHead = "INSERT INTO jobs (tenant_id, type, status, ordering_key, key_head, attempts, max_attempts, "
                + "finished_at, last_error) SELECT ?, 'record', 'dead', 'k' || i, true, 1, 1, now(), 'boom' "
                + "FROM generate_series(1, ?) i";
        try {
            app.db.dsl().execute(deadHead, many, 10_001);
            app.db.dsl().execute(deadHead, one, 1);
            JsonNode rows = app.admin("GET", "/v1/admin/overview?search=" + run, null).body().get("tenants");
            assertEquals(2, rows.size(), rows.toString());
            for (JsonNode row : rows) {
                long expected = row.get("tenant").asText().equals(many) ? 10_001 : 1;
                assertEquals(expected, row.get("blocked_ordering_keys").asLong(), row.get("tenant").asText());
                assertEquals(expected, row.get("counts").get("dead").asLong(), row.get("tenant").asText());
            }
        } finally {
            app.db.dsl().execute("DELETE FROM jobs WHERE tenant_id IN (?, ?)", many, one); // no blocked keys left for other tests
        }
    }

    /** The page says the offset that was asked for, also past the end (it had answered the list's size instead). */
    @Test
    void aPagePastTheEndEchoesItsOffsetAndBlankParametersTakeTheDefaults() {
        JsonNode past = app.admin("GET", "/v1/admin/overview?offset=100000", null).body();
        assertEquals(100000, past.get("page").get("offset").asInt(), past.get("page").toString());
        assertEquals(0, past.get("tenants").size());
        assertTrue(past.get("page").get("next_offset").isNull());
        // as GET /v1/jobs?limit= does: a blank parameter is one left out
        TestApp.Res blank = app.admin("GET", "/v1/admin/overview?offset=&limit=", null);
        assertEquals(200, blank.status(), blank.toString());
        assertEquals(0, blank.body().get("page").get("offset").asInt());
        assertEquals(DashboardFigures.DEFAULT_PAGE, blank.body().get("page").get("limit").asInt());
        // blank is blank with spaces too, for every parameter alike (offset=%20 and search=%20 had been 422s where
        // limit=%20 was left out), and a number around spaces is read as limit's is
        TestApp.Res spaces = app.admin("GET", "/v1/admin/overview?offset=%20&limit=%20&search=%20", null);
        assertEquals(200, spaces.status(), spaces.toString());
        assertEquals(0, spaces.body().get("page").get("offset").asInt());
        assertTrue(spaces.body().get("page").get("search").isNull(), spaces.body().get("page").toString());
        TestApp.Res padded = app.admin("GET", "/v1/admin/overview?offset=%202&limit=%203", null);
        assertEquals(200, padded.status(), padded.toString());
        assertEquals(2, padded.body().get("page").get("offset").asInt());
        assertEquals(3, padded.body().get("page").get("limit").asInt());
    }

    @Test
    void aBadPageOrSearchIsA422NamingTheField() {
        for (String[] bad : new String[][]{{"limit=0", "limit"}, {"limit=501", "limit"}, {"offset=-1", "offset"},
                {"limit=x", "limit"}, {"search=Not%20An%20Id", "search"}}) {
            TestApp.Res r = app.admin("GET", "/v1/admin/overview?" + bad[0], null);
            assertEquals(422, r.status(), bad[0]);
            assertEquals(bad[1], r.body().get("errors").get(0).get("field").asText(), bad[0]);
        }
        // every bad parameter in one 422, as GET /v1/jobs and GET /v1/admin/tenants answer: it named the first only,
        // so a caller learned of the next one by fixing the first and asking again
        TestApp.Res all = app.admin("GET", "/v1/admin/overview?offset=-1&limit=0&search=Not%20An%20Id", null);
        assertEquals(422, all.status(), all.toString());
        List<String> fields = new ArrayList<>();
        for (JsonNode e : all.body().get("errors")) fields.add(e.get("field").asText());
        assertEquals(List.of("offset", "limit", "search"), fields, all.toString());
    }
}
