// The item loop: how one run of the node works through its items.
// 1. Every item is checked first (each operation's `prepare`, which sends nothing, then its `check`,
//    e.g. an S3 object's HEAD, Concurrency at a time): a batch with a bad item orders nothing, unless
//    Continue On Fail turns the bad items into error items.
// 2. Then all items run at once: at most Concurrency of their requests under way (the run's places),
//    each taking its turn from the key's pace, which every run of the key shares and which slows
//    down for all when the service asks for it (transport/pacing.ts).
// 3. Waits for jobs share one JobWaiter: one round of reads per interval for all of them.
// 4. Each item ends as its outputs or one error item, in input order, paired with its input.
//    Without Continue On Fail, the first failure stops the batch (nothing more is sent) and its
//    error names the items already ordered, with their job ids.
import type {
	IDataObject,
	IExecuteFunctions,
	INodeExecutionData,
	INodeProperties,
	JsonObject,
} from 'n8n-workflow';
import { NodeApiError, NodeOperationError } from 'n8n-workflow';

import { BatchStopped, DEFAULT_CONCURRENCY, RunSlots, useRunSlots } from '../transport/runSlots';
import { OrderDesk } from '../orders/desk';
import { JobWaiter } from '../waiting/poll';

/** Batching → Concurrency, for the operations that send files or order. */
export const batchingField: INodeProperties = {
	displayName: 'Batching',
	name: 'batching',
	type: 'collection',
	placeholder: 'Add Option',
	default: {},
	options: [
		{
			displayName: 'Concurrency',
			name: 'concurrency',
			type: 'number',
			typeOptions: { minValue: 1, maxValue: 32 },
			default: DEFAULT_CONCURRENCY,
			description:
				'How many requests to the service (uploads, orders, downloads) may be under way at once for the items of one run. All of them slow down together when the service asks (429, 503).',
		},
	],
};

export interface Operation<P = unknown> {
	/** Reads and checks the item's parameters. Sends nothing, so a mistake costs nothing. */
	prepare?: (this: IExecuteFunctions, itemIndex: number) => Promise<P>;
	/**
	 * Checks outside the service that need a request but cost nothing (an S3 object's HEAD): run for
	 * every item after `prepare`, Concurrency at a time, and before the first order of the batch.
	 */
	check?: (this: IExecuteFunctions, itemIndex: number, prepared: P) => Promise<void>;
	execute: (
		this: IExecuteFunctions,
		itemIndex: number,
		prepared: P,
	) => Promise<INodeExecutionData[]>;
}

type NodeError = NodeApiError | NodeOperationError;

/** The failure as n8n's error classes, with the item it belongs to. */
export function asNodeError(ctx: IExecuteFunctions, error: unknown, itemIndex: number): NodeError {
	// Both constructors hand back an error that already is of their class, unchanged.
	if (error instanceof NodeApiError)
		return new NodeApiError(ctx.getNode(), error as unknown as JsonObject, { itemIndex });
	return new NodeOperationError(ctx.getNode(), error as Error, { itemIndex });
}

/**
 * An error item (Continue On Fail), paired with its input: the message and what helps a workflow
 * branch (description, httpCode, code, param, requestId), never a credential. Under "Continue
 * (using error output)" they all go into one `error` object: n8n sends an item down the error
 * output only when its json holds `error` alone (1.x and 2.x; 2.x also allows message and
 * details), or when the item carries the error object, whose json n8n cuts down to the message.
 */
export function errorItem(
	ctx: IExecuteFunctions,
	error: NodeError,
	itemIndex: number,
): INodeExecutionData {
	const details: IDataObject = {};
	if (error.description) details.description = error.description;
	const { code, param, requestId } = error.context as IDataObject;
	if (error instanceof NodeApiError && error.httpCode) details.httpCode = error.httpCode;
	if (code) details.code = code;
	if (param) details.param = param;
	if (requestId) details.requestId = requestId;
	const json: IDataObject =
		ctx.getNode().onError === 'continueErrorOutput'
			? { error: { message: error.message, ...details } }
			: { error: error.message, ...details };
	return { json, pairedItem: { item: itemIndex } };
}

/** What an operation noticed that the items do not show, for the run's hints (actions/hints.ts). */
export interface RunNotes {
	/** Get Many with a Metadata or Title filter that read the job list to its end. */
	wholeHistory?: { read: number; matched: number };
	/** Job → Create's On Webhook waited in place: a sub-workflow its parent waits for. */
	webhookInPlace?: boolean;
	/** Job → Create's On Webhook checked jobs an earlier execution ordered (their events go there). */
	webhookElsewhere?: boolean;
}

/** What the operations of one node run share: the waiter, the order desk, the jobs ordered so far, its notes. */
export class Batch {
	readonly waiter: JobWaiter;
	readonly desk: OrderDesk;
	/** Item index → job id, for every order the service accepted in this run. */
	readonly ordered = new Map<number, string>();
	/** Which repeats replay those orders (each Idempotency choice of the run says its own). */
	readonly replays = new Set<string>();
	/** On Webhook jobs another execution ordered: their events go to its URL, not this one's. */
	readonly orderedElsewhere = new Set<string>();
	readonly notes: RunNotes = {};
	/** What runs once every item is done, with the run's outputs (On Webhook: sleep until the events). */
	afterRun?: (outputs: INodeExecutionData[]) => Promise<void>;

	constructor(ctx: IExecuteFunctions) {
		this.waiter = new JobWaiter(ctx);
		this.desk = new OrderDesk(ctx);
	}
}

const batches = new WeakMap<object, Batch>();

/** The batch of this node run (one is made for a run outside the router, e.g. in a test). */
export function batchOf(ctx: IExecuteFunctions): Batch {
	let batch = batches.get(ctx);
	if (!batch) batches.set(ctx, (batch = new Batch(ctx)));
	return batch;
}

/** Adds to a failure the orders placed before the batch stopped, so that none is lost from sight. */
function withOrdered(error: NodeError, { ordered, replays }: Batch): NodeError {
	if (ordered.size === 0) return error;
	const list = [...ordered].sort(([a], [b]) => a - b);
	const named = list.map(([item, job]) => `item ${item} → job ${job}`).join(', ');
	error.description =
		`${error.description ? `${error.description} ` : ''}Ordered before the node stopped, and not lost: ${named}. ${[...replays].join(' ')}`.trim();
	Object.assign(error.context, { orderedJobs: list.map(([item, jobId]) => ({ item, jobId })) });
	return error;
}

export interface RunOptions {
	concurrency: number;
	operationFor: (itemIndex: number) => Operation;
}

export async function runItems(
	ctx: IExecuteFunctions,
	options: RunOptions,
): Promise<INodeExecutionData[]> {
	const count = ctx.getInputData().length;
	const outputs: INodeExecutionData[][] = [];
	const batch = batchOf(ctx);
	const slots = new RunSlots(options.concurrency);
	useRunSlots(ctx, slots);
	let failure: NodeError | undefined;

	const fail = (error: unknown, i: number) => {
		if (error instanceof BatchStopped) return;
		const nodeError = asNodeError(ctx, error, i);
		if (ctx.continueOnFail()) {
			outputs[i] = [errorItem(ctx, nodeError, i)];
		} else if (!failure) {
			failure = nodeError;
			slots.stop();
			batch.waiter.stop(new BatchStopped());
		}
	};
	const prepare = async (i: number) => {
		try {
			return { prepared: await options.operationFor(i).prepare?.call(ctx, i) };
		} catch (error) {
			fail(error, i);
			return undefined;
		}
	};
	const check = async (i: number, p: { prepared: unknown } | undefined) => {
		const operation = options.operationFor(i);
		if (!p || !operation.check || failure) return p;
		try {
			await operation.check.call(ctx, i, p.prepared);
			return p;
		} catch (error) {
			fail(error, i);
			return undefined;
		}
	};
	const execute = async (i: number, prepared: unknown) => {
		try {
			const output = await options.operationFor(i).execute.call(ctx, i, prepared);
			outputs[i] = ctx.helpers.constructExecutionMetaData(output, { itemData: { item: i } });
		} catch (error) {
			fail(error, i);
		}
	};

	const prepared: Array<{ prepared: unknown } | undefined> = [];
	for (let i = 0; i < count && !failure; i++) prepared[i] = await prepare(i);
	if (failure) throw failure;
	// Concurrency checks at a time; a failed check (without Continue On Fail) orders nothing.
	let next = 0;
	const checker = async () => {
		for (let i = next++; i < count && !failure; i = next++)
			prepared[i] = await check(i, prepared[i]);
	};
	await Promise.all(Array.from({ length: Math.min(options.concurrency, count) }, checker));
	if (failure) throw failure;
	await Promise.all(prepared.map(async (p, i) => p && (await execute(i, p.prepared))));
	if (failure) throw withOrdered(failure, batch);
	const result = outputs.flatMap((o) => o ?? []);
	await batch.afterRun?.(result);
	return result;
}
