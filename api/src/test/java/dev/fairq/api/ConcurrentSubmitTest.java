package dev.fairq.api;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** 20 identical POSTs with one job_key at the same moment: one job, one 201, nineteen 200 replays. */
class ConcurrentSubmitTest extends AppTest {
    @Test
    void twentyConcurrentIdenticalSubmitsMakeOneJob() throws Exception {
        String tenant = TestApp.uniqueTenant("race");
        String key = app.newTenantKey(tenant);
        String body = "{\"type\": \"record\", \"payload\": {\"order\": 42}, \"job_key\": \"charge-42\", \"delay_ms\": 60000}";
        ExecutorService pool = Executors.newFixedThreadPool(20);
        CountDownLatch go = new CountDownLatch(1);
        List<Future<TestApp.Res>> futures = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            futures.add(pool.submit(() -> {
                go.await();
                return app.call("POST", "/v1/jobs", key, body);
            }));
        }
        go.countDown();
        int created = 0, replayed = 0;
        long id = -1;
        for (Future<TestApp.Res> f : futures) {
            TestApp.Res r = f.get();
            if (r.status() == 201) created++;
            if (r.status() == 200 && "true".equals(r.header("Idempotent-Replay"))) replayed++;
            long jobId = r.body().get("id").asLong();
            if (id == -1) id = jobId;
            assertEquals(id, jobId, "every answer carries the same job");
        }
        pool.shutdown();
        assertEquals(1, created);
        assertEquals(19, replayed);
        assertEquals(1, app.db.dsl().fetchCount(app.db.dsl().selectOne().from("jobs").where("tenant_id = ?", tenant)));

        TestApp.Res different = app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {\"order\": 43}, \"job_key\": \"charge-42\"}");
        assertEquals(409, different.status());
        assertEquals(1, app.db.dsl().fetchCount(app.db.dsl().selectOne().from("jobs").where("tenant_id = ?", tenant)));
    }
}
