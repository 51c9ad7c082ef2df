package dev.fairq.api;

import dev.fairq.schema.JobStore;
import org.jooq.DSLContext;

/** The answer to cancel / retry / discard: the job afterwards, 404, or 409 naming its status. */
final class JobActions {
    private JobActions() {}

    static JobView answer(DSLContext db, JobStore store, String tenantOrNull, long id, JobStore.ActionResult result,
                          String conflictMessage) {
        return switch (result) {
            case NOT_FOUND -> throw ApiException.notFound("no job " + id);
            case WRONG_STATUS -> {
                String status = (tenantOrNull == null ? store.find(db, id) : store.find(db, tenantOrNull, id))
                        .map(j -> j.getStatus().getLiteral()).orElse("unknown");
                throw ApiException.conflict(conflictMessage + "; job " + id + " is " + status);
            }
            case DONE -> JobView.of((tenantOrNull == null ? store.find(db, id) : store.find(db, tenantOrNull, id))
                    .orElseThrow(() -> ApiException.notFound("no job " + id)));
        };
    }
}
