package dev.fairq.scheduler;

/**
 * {@link FairnessTest}'s scenarios under the default, shares by worker time. The simulated workers record no
 * attempt times (no started_at), so nothing settles and every job is charged the same estimate: time shares are
 * then job-start shares, and every count FairnessTest asserts must hold here too (the newcomer served at once,
 * weights 3:1, no credit hoarded while idle or while a neighbour is rate limited).
 */
class FairnessByTimeTest extends FairnessTest {
    @Override
    SchedulerConfig.FairShare share() {
        return SchedulerConfig.FairShare.TIME;
    }
}
