// How one run of the node works through its items:
// 1. Every item is checked first (the operation's `prepare`, which sends nothing, then its `inspect`,
//    e.g. an S3 object's HEAD, Concurrency at a time): a batch with a bad item orders nothing, unless
//    Continue On Fail turns the bad items into error items.
// 2. Then all items run at once: at most Concurrency of their requests under way, each also waiting
//    for its turn under the key's rate limits (transport/limits.ts).
// 3. Each item ends as its outputs or one error item, in input order, paired with its input.
//    Without Continue On Fail, the first failure stops the batch (nothing more is sent) and its
//    error names the items already ordered, with their job ids; a failure that sent nothing and
//    concerns its item alone (ItemOnlyError) lets the others go on, and is thrown once they are done.
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { ItemOnlyError } from '../transport/errors';
import { RunStopped, DEFAULT_CONCURRENCY, runConcurrency, runLimit } from '../transport/limits';
import { runStateOf, withOrdered } from './runState';
import type { NodeError } from './errorItems';
import { asNodeError, errorItem } from './errorItems';
import { showHints } from './hints';
import * as account from './account';
import * as job from './job';
import * as upload from './upload';

export interface Operation<P = unknown> {
	/** Reads and checks the item's parameters. Sends nothing, so a mistake costs nothing. */
	prepare?: (this: IExecuteFunctions, itemIndex: number) => Promise<P>;
	/**
	 * Checks outside the service that need a request but cost nothing (an S3 object's HEAD): run for
	 * every item after `prepare`, Concurrency at a time, and before the first order of the batch.
	 */
	inspect?: (this: IExecuteFunctions, itemIndex: number, prepared: P) => Promise<void>;
	execute: (
		this: IExecuteFunctions,
		itemIndex: number,
		prepared: P,
	) => Promise<INodeExecutionData[]>;
}

const operations: Record<string, Record<string, Operation>> = {
	account: { get: account.get },
	job: {
		create: job.create as Operation,
		get: job.get,
		getAll: job.getAll,
		getCaptions: job.getCaptions as Operation,
	},
	upload: { create: upload.create as Operation },
};

/** The operations that offer Concurrency; the others send one request at a time. */
const BATCHING = new Set(['job:create', 'job:getCaptions', 'upload:create']);

export async function router(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	// Resource and Operation take no expressions: one operation for every item.
	const resource = this.getNodeParameter('resource', 0) as string;
	const name = this.getNodeParameter('operation', 0) as string;
	const operation = operations[resource]?.[name];
	if (!operation)
		throw new NodeOperationError(
			this.getNode(),
			`The operation "${name}" of resource "${resource}" is not supported`,
		);
	const concurrency = BATCHING.has(`${resource}:${name}`)
		? Number(this.getNodeParameter('concurrency', 0, DEFAULT_CONCURRENCY))
		: 1;
	if (!(Number.isInteger(concurrency) && concurrency >= 1))
		throw new NodeOperationError(this.getNode(), `Concurrency is ${concurrency}`, {
			description: 'Set it to a whole number of 1 or more (default 4).',
		});
	const outputs = await runItems(this, operation, concurrency);
	showHints(this, outputs);
	return [outputs];
}

async function runItems(
	ctx: IExecuteFunctions,
	operation: Operation,
	concurrency: number,
): Promise<INodeExecutionData[]> {
	const count = ctx.getInputData().length;
	const batch = runStateOf(ctx);
	const limit = runLimit(ctx, concurrency);
	runConcurrency.set(ctx, limit);
	const outputs: INodeExecutionData[][] = [];
	const run: { failure?: NodeError; itemFailure?: NodeError } = {};
	const failure = () => run.failure;
	/** One step of an item: a failure is its error item, or (without Continue On Fail) stops the batch. */
	const step = async <T>(i: number, work: () => Promise<T>): Promise<{ value: T } | undefined> => {
		try {
			return { value: await work() };
		} catch (error) {
			if (error instanceof RunStopped) return undefined;
			const nodeError = asNodeError(ctx, error, i);
			if (ctx.continueOnFail()) outputs[i] = [errorItem(ctx, nodeError, i)];
			else if (error instanceof ItemOnlyError) run.itemFailure ??= nodeError;
			else if (!run.failure) {
				run.failure = nodeError;
				limit.stop();
				batch.waiter.stop(new RunStopped());
			}
			return undefined;
		}
	};
	const prepared: Array<{ value: unknown } | undefined> = [];
	for (let i = 0; i < count && !failure(); i++)
		prepared[i] = await step(i, async () => await operation.prepare?.call(ctx, i));
	const { inspect } = operation;
	// Their requests Concurrency at a time; a failed inspection (without Continue On Fail) orders nothing.
	if (inspect && !failure())
		await Promise.all(
			prepared.map(async (p, i) => {
				if (p)
					prepared[i] = await step(i, async () => (await inspect.call(ctx, i, p.value), p.value));
			}),
		);
	if (failure()) throw failure();
	await Promise.all(
		prepared.map(async (p, i) => {
			const output =
				p && (await step(i, async () => await operation.execute.call(ctx, i, p.value)));
			if (output)
				outputs[i] = ctx.helpers.constructExecutionMetaData(output.value, {
					itemData: { item: i },
				});
		}),
	);
	await batch.orders.removalsDone();
	const failed = failure() ?? run.itemFailure;
	if (failed) throw withOrdered(failed, batch);
	const result = outputs.flatMap((o) => o ?? []);
	await batch.afterRun?.(result);
	return result;
}
