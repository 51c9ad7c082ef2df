package dev.fairq.api;

import dev.fairq.schema.OperatorActions;
import jakarta.ws.rs.core.Response;

/** The answer to cancel / retry / discard: the job as the action left it, 404, or 409 naming its status. */
final class JobActions {
    private JobActions() {}

    static JobView answer(long id, OperatorActions.ActionOutcome outcome, String conflictMessage) {
        return switch (outcome.result()) {
            case NOT_FOUND -> throw ApiException.notFound("no job " + id);
            case WRONG_STATUS -> throw ApiException.conflict(conflictMessage + "; job " + id + " is "
                    + outcome.job().getStatus().getLiteral());
            case DONE, STOPPING, ALREADY_ENDED -> JobView.of(outcome.job());
        };
    }

    /**
     * A cancel: 202 with the job while a running job is stopping (the worker learns within a second), 200
     * with the job once it has ended: cancelled now, or already ended before (unchanged: read its status).
     */
    static Response cancelAnswer(long id, OperatorActions.ActionOutcome outcome) {
        JobView job = answer(id, outcome, "cancel");
        return Response.status(outcome.result() == OperatorActions.ActionResult.STOPPING ? 202 : 200).entity(job).build();
    }
}
