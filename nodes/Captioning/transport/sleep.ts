// Timers through n8n-workflow, so that cancelling the execution ends a wait at once.
import * as workflow from 'n8n-workflow';

/** Sleeps, waking early (with an error) when the execution is cancelled. */
export async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
	// n8n 1.x has sleepWithAbort(ms, signal); n8n 2.x folds it into sleep(ms, signal).
	const withAbort = (
		workflow as { sleepWithAbort?: (ms: number, signal: AbortSignal) => Promise<void> }
	).sleepWithAbort;
	if (signal && withAbort) return await withAbort(ms, signal);
	return await (workflow.sleep as (ms: number, signal?: AbortSignal) => Promise<void>)(ms, signal);
}
