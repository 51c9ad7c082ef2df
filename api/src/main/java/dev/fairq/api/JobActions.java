package dev.fairq.api;

import dev.fairq.schema.JobStore;
import dev.fairq.schema.OperatorActions;

/** The answer to cancel / retry / discard: the job as the action left it, 404, or 409 naming its status. */
final class JobActions {
    private JobActions() {}

    static JobView answer(long id, OperatorActions.ActionOutcome outcome, String conflictMessage) {
        return switch (outcome.result()) {
            case NOT_FOUND -> throw ApiException.notFound("no job " + id);
            case WRONG_STATUS -> throw ApiException.conflict(conflictMessage + "; job " + id + " is "
                    + outcome.job().getStatus().getLiteral());
            case DONE -> JobView.of(outcome.job());
        };
    }
}
