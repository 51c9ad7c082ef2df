package dev.fairq.scheduler;

import dev.fairq.schema.TenantLimits;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The fetch plan (how many candidates the scheduler reads per tenant) must be exactly what the policy then
 * picks when every tenant has enough jobs: fewer would starve a round, more is wasted reading.
 */
class FetchPlanTest {

    private static TenantState tenant(String id, int weight) {
        return new TenantState(new TenantLimits(id, weight, 1e6, 1_000_000, 1_000_000, 1_000_000, false, List.of()),
                () -> 0L);
    }

    @Test
    void planMatchesThePicksOverManyRandomRounds() {
        Random random = new Random(42);
        for (int trial = 0; trial < 400; trial++) {
            Map<String, TenantState> forPlan = new HashMap<>(), forChoose = new HashMap<>();
            Map<String, Integer> limits = new LinkedHashMap<>();
            boolean many = trial % 2 == 1; // more tenants than picks: only the lowest passes may be planned
            int tenants = 1 + random.nextInt(many ? 300 : 12);
            for (int i = 0; i < tenants; i++) {
                String id = "t" + i;
                int weight = 1 + random.nextInt(5);
                TenantState a = tenant(id, weight), b = tenant(id, weight);
                double pass = random.nextInt(50) / 10.0;
                boolean wasEligible = random.nextBoolean();
                a.pass = b.pass = pass;
                a.eligibleLastRound = b.eligibleLastRound = wasEligible;
                forPlan.put(id, a);
                forChoose.put(id, b);
                limits.put(id, 1 + random.nextInt(300));
            }
            int n = 1 + random.nextInt(many ? 40 : 500);
            Double nextRank = random.nextBoolean() ? null : random.nextInt(60) / 10.0;

            WeightedFairAdmission planner = new WeightedFairAdmission(), chooser = new WeightedFairAdmission();
            Map<String, Double> passesBefore = new HashMap<>();
            forPlan.forEach((k, t) -> passesBefore.put(k, t.pass));
            Map<String, Integer> plan = planner.fetchPlan(limits, forPlan, n, nextRank);

            Map<String, List<Long>> candidates = new LinkedHashMap<>(); // ample: each tenant's full limit
            long id = 1;
            for (Map.Entry<String, Integer> l : limits.entrySet()) {
                List<Long> ids = new ArrayList<>();
                for (int k = 0; k < l.getValue(); k++) ids.add(id++);
                candidates.put(l.getKey(), ids);
            }
            Map<String, Integer> picked = new HashMap<>();
            for (AdmissionPolicy.Pick p : chooser.choose(candidates, forChoose, n, nextRank, null)) {
                picked.merge(p.tenantId(), 1, Integer::sum);
            }
            assertEquals(picked, plan, "trial " + trial);
            forPlan.forEach((k, t) -> assertEquals(passesBefore.get(k), t.pass, "the plan changes no pass"));
        }
    }

    @Test
    void weightsSplitThePlanAndALimitGivesItsRestToOthers() {
        Map<String, TenantState> tenants = Map.of("a", tenant("a", 3), "b", tenant("b", 1), "c", tenant("c", 1));
        Map<String, Integer> plan = new WeightedFairAdmission().fetchPlan(Map.of("a", 1000, "b", 1000), tenants, 100, null);
        assertEquals(Map.of("a", 75, "b", 25), plan);
        plan = new WeightedFairAdmission().fetchPlan(Map.of("a", 10, "b", 1000), tenants, 100, null);
        assertEquals(Map.of("a", 10, "b", 90), plan);
    }
}
