// What the package reads or writes of n8n beyond its public node interface, all of it here, each
// with the real-n8n test that fails when n8n changes it (npm run test:e2e):
// - a request n8n's own policy refused (2.x's SSRF protection marks its refusals non-retryable):
//   test/e2e/networkFaults.test.ts;
// - the items a waiting execution keeps: n8n keeps a waiting node's input, and hands it on when the
//   wait ends by time, so On Webhook leaves its jobs there: test/e2e/durableWaits.test.ts (Timeout);
// - whether a sub-workflow's parent waits for it (n8n's run data, `parentExecution.shouldResume`):
//   test/e2e/e2e.test.ts (the sub-workflow ordering with On Webhook).
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';

/** n8n 2.x's mark on what its own policy refused to send (`@n8n/backend-network`). */
const REFUSED_BY_N8N = Symbol.for('n8n.backend-network.non-retryable-error');

/** Whether n8n refused to send the request (the mark, on the error or one it wraps). */
export function refusedByN8n(cause: unknown): boolean {
	for (let level = cause, depth = 0; level && typeof level === 'object' && depth < 6; depth++) {
		if ((level as Record<symbol, unknown>)[REFUSED_BY_N8N] === true) return true;
		level = (level as { cause?: unknown }).cause;
	}
	return false;
}

/**
 * Puts the execution to wait until `until` with `items` where n8n keeps the waiting node's input:
 * what a wait that ends by time hands on.
 */
export async function waitWithItems(
	ctx: IExecuteFunctions,
	items: INodeExecutionData[],
	until: Date,
): Promise<void> {
	ctx.getExecuteData().data.main[0] = items.map((item) => ({
		json: item.json,
		pairedItem: item.pairedItem,
	}));
	await ctx.putExecutionToWait(until);
}

/**
 * Whether this run is a sub-workflow whose parent waits for it (n8n's Execute Sub-workflow with
 * "wait for completion", or an AI tool's workflow). n8n's own rule: a parent that did not say it
 * waits (shouldResume unset) is resumed.
 */
export function parentWaitsForThisRun(ctx: IExecuteFunctions): boolean {
	if (ctx.getMode() !== 'integrated') return false;
	// n8n-core's execution context keeps the run's data in a field not on IExecuteFunctions.
	const data = (
		ctx as unknown as { runExecutionData?: { parentExecution?: { shouldResume?: boolean } } }
	).runExecutionData;
	return data?.parentExecution?.shouldResume !== false;
}
