// What the operations of one node run share (its batch): the waits for jobs, the orders, the jobs
// ordered so far, what ran into a hint, and what runs once every item is done.
import type { INodeExecutionData, INodeProperties, IExecuteFunctions } from 'n8n-workflow';

import { RunOrders } from '../orders/runOrders';
import { DEFAULT_CONCURRENCY } from '../transport/limits';
import { JobWaiter } from '../waiting/poll';
import type { NodeError } from './errorItems';

/** What an operation noticed that the items do not show, for the run's hints (actions/hints.ts). */
export interface RunNotes {
	/** Get Many with a Metadata or Title filter that read the job list to its end. */
	wholeHistory?: { read: number; matched: number };
	/** Job → Create's On Webhook waited in place, and why: a sub-workflow, or a job another execution ordered. */
	webhookInPlace?: 'subWorkflow' | 'elsewhere';
}

/** What the operations of one node run share: the waiter, the run's orders, the jobs ordered so far, its notes. */
class RunState {
	/** Item index → job id, for every order the service accepted in this run. */
	readonly ordered = new Map<number, string>();
	/** Which repeats replay those orders (each Idempotency choice of the run says its own). */
	readonly replays = new Set<string>();
	/** On Webhook: the longest Timeout of the run's orders (minutes). */
	webhookTimeout = 0;
	readonly notes: RunNotes = {};
	/** What runs once every item is done, with the run's outputs (On Webhook: sleep until the events). */
	afterRun?: (outputs: INodeExecutionData[]) => Promise<void>;

	constructor(
		readonly waiter: JobWaiter,
		readonly orders: RunOrders,
	) {}
}

const runStates = new WeakMap<object, RunState>();

/** The batch of this node run (one is made for a run outside the router, e.g. in a test). */
export function runStateOf(ctx: IExecuteFunctions): RunState {
	let batch = runStates.get(ctx);
	if (!batch) runStates.set(ctx, (batch = new RunState(new JobWaiter(ctx), new RunOrders(ctx))));
	return batch;
}

/** Adds to a failure the orders placed before the batch stopped, so that none is lost from sight. */
export function withOrdered(error: NodeError, { ordered, replays }: RunState): NodeError {
	if (ordered.size === 0) return error;
	const list = [...ordered].sort(([a], [b]) => a - b);
	const named = list.map(([item, job]) => `item ${item} → job ${job}`).join(', ');
	error.description =
		`${error.description ? `${error.description} ` : ''}Ordered before the node stopped, and not lost: ${named}. ${[...replays].join(' ')}`.trim();
	Object.assign(error.context, { orderedJobs: list.map(([item, jobId]) => ({ item, jobId })) });
	return error;
}

/** Concurrency, for the operations that send files, order or download. */
export const concurrencyField: INodeProperties = {
	displayName: 'Concurrency',
	name: 'concurrency',
	type: 'number',
	typeOptions: { minValue: 1, maxValue: 32 },
	default: DEFAULT_CONCURRENCY,
	description: 'How many requests to the service may be under way at once for the items of one run',
};
