// The item loop: how one run of the node works through its items.
// 1. Every item is checked first (each operation's `prepare`, which sends nothing, then its `check`,
//    e.g. an S3 object's HEAD, Concurrency at a time): a batch with a bad item orders nothing, unless
//    Continue On Fail turns the bad items into error items.
// 2. Then all items run at once: at most Concurrency of their requests under way, each also waiting
//    for its turn under the key's rate limits (transport/rateLimits.ts).
// 3. Each item ends as its outputs or one error item, in input order, paired with its input.
//    Without Continue On Fail, the first failure stops the batch (nothing more is sent) and its
//    error names the items already ordered, with their job ids.
import type {
	IExecuteFunctions,
	INodeExecutionData,
	NodeApiError,
	NodeOperationError,
} from 'n8n-workflow';

import { BatchStopped, eachAtMost, RunConcurrency, useConcurrency } from '../transport/concurrency';
import type { Batch } from './batchState';
import { batchOf, withOrdered } from './batchState';
import { asNodeError, errorItem } from './errorItems';

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
type Prepared = { prepared: unknown } | undefined;

export interface RunOptions {
	concurrency: number;
	operationFor: (itemIndex: number) => Operation;
}

/** One run's items: each one's outputs, and the first failure (without Continue On Fail). */
class ItemRun {
	readonly outputs: INodeExecutionData[][] = [];
	failure: NodeError | undefined;
	readonly batch: Batch;
	private readonly concurrency: RunConcurrency;

	constructor(
		private readonly ctx: IExecuteFunctions,
		private readonly options: RunOptions,
	) {
		this.batch = batchOf(ctx);
		this.concurrency = new RunConcurrency(options.concurrency, ctx.getExecutionCancelSignal());
		useConcurrency(ctx, this.concurrency);
	}

	/** An item failed: its error item, or (without Continue On Fail) the batch stops. */
	fail(error: unknown, i: number): undefined {
		if (error instanceof BatchStopped) return undefined;
		const nodeError = asNodeError(this.ctx, error, i);
		if (this.ctx.continueOnFail()) {
			this.outputs[i] = [errorItem(this.ctx, nodeError, i)];
		} else if (!this.failure) {
			this.failure = nodeError;
			this.concurrency.stop();
			this.batch.waiter.stop(new BatchStopped());
		}
		return undefined;
	}

	async prepare(i: number): Promise<Prepared> {
		try {
			return { prepared: await this.options.operationFor(i).prepare?.call(this.ctx, i) };
		} catch (error) {
			return this.fail(error, i);
		}
	}

	async check(i: number, p: Prepared): Promise<Prepared> {
		const operation = this.options.operationFor(i);
		if (!p || !operation.check || this.failure) return p;
		try {
			await operation.check.call(this.ctx, i, p.prepared);
			return p;
		} catch (error) {
			return this.fail(error, i);
		}
	}

	async execute(i: number, prepared: unknown): Promise<void> {
		try {
			const output = await this.options.operationFor(i).execute.call(this.ctx, i, prepared);
			this.outputs[i] = this.ctx.helpers.constructExecutionMetaData(output, {
				itemData: { item: i },
			});
		} catch (error) {
			this.fail(error, i);
		}
	}
}

export async function runItems(
	ctx: IExecuteFunctions,
	options: RunOptions,
): Promise<INodeExecutionData[]> {
	const count = ctx.getInputData().length;
	const run = new ItemRun(ctx, options);
	const prepared: Prepared[] = [];
	for (let i = 0; i < count && !run.failure; i++) prepared[i] = await run.prepare(i);
	if (run.failure) throw run.failure;
	// Concurrency checks at a time; a failed check (without Continue On Fail) orders nothing.
	await eachAtMost(
		count,
		options.concurrency,
		async (i) => void (prepared[i] = await run.check(i, prepared[i])),
		() => run.failure !== undefined,
	);
	if (run.failure) throw run.failure;
	await Promise.all(prepared.map(async (p, i) => p && (await run.execute(i, p.prepared))));
	await run.batch.orders.settled();
	if (run.failure) throw withOrdered(run.failure, run.batch);
	const result = run.outputs.flatMap((o) => o ?? []);
	await run.batch.afterRun?.(result);
	return result;
}
