// What the orders of one node run share: the marks of what this node may have sent before, the
// newest jobs of the workspace read for a repeat's lookup (one scan for the whole run),
// Concurrency for the files it reads, and the orders under way, so that equal orders of a batch
// are one POST.
import type { IDataObject, IExecuteFunctions, NodeApiError } from 'n8n-workflow';

import type { InputFile } from '../media/binary';
import { closingReads } from '../media/binary';
import type { Job } from '../model/types';
import { apiRequest } from '../transport';
import type { Limit } from '../transport/limits';
import { DEFAULT_CONCURRENCY, runConcurrency, runLimit } from '../transport/limits';
import { jobPages, notInWorkspace, readJob } from '../transport/jobs';
import { ORDER_TAG } from './keys';
import { ProcessedStore } from '../transport/processedStore';

/**
 * How far back a repeat looks for its earlier order: the newest LOOKUP_PAGES pages of the job list
 * (the interface names no filter by metadata, docs/paying-once.md). Further back, or not yet in the
 * list, an order is not found, and the repeat stops rather than pay again.
 */
export const LOOKUP_PAGES = 10;

/**
 * What this node knows of an order it sent, by its tag: its job's id, or, while the outcome is
 * unknown (no answer said it was placed or refused), when it was first sent (ms).
 */
export type OrderRecord = string | number;

/** The most orders the workflow keeps records of, the oldest going first (n8n saves static data whole). */
const KEPT_RECORDS = 5000;

export interface Placed {
	job: Job;
	replayed: boolean;
	/** An On Webhook order placed by another execution: its events go to that execution's URL. */
	elsewhere?: boolean;
}

/** What the orders of one node run share: the marks, the lookups, the files read, the orders under way. */
export class RunOrders {
	private readonly store: ProcessedStore | undefined;
	/** The orders of this run by tag: equal orders of a batch share the first one's job. */
	readonly underWay = new Map<string, Promise<Placed>>();
	private scan: ReturnType<typeof jobScan> | undefined;
	private readonly removals: Array<Promise<unknown>> = [];
	private fileSlots: Limit | undefined;
	private readonly wholeFileSlot: Limit;
	private account: Promise<string> | undefined;

	constructor(private readonly ctx: IExecuteFunctions) {
		this.store = ProcessedStore.of(ctx);
		this.wholeFileSlot = runLimit(ctx, 1);
	}

	/**
	 * Reads a file (a probe, a hash, an upload) in one of Concurrency slots, whatever n8n's binary
	 * mode: the slot is free once every stream of the file has closed. A file in n8n's database
	 * mode (queue mode's default) is loaded whole for any read, several times its size on the way
	 * from Postgres: those are read one at a time.
	 */
	async readingFile<T>(
		i: number,
		file: InputFile,
		read: (file: InputFile) => Promise<T>,
	): Promise<T> {
		this.fileSlots ??= runLimit(
			this.ctx,
			runConcurrency.get(this.ctx)?.size ?? DEFAULT_CONCURRENCY,
		);
		const slots = file.binaryId?.startsWith('database:') ? this.wholeFileSlot : this.fileSlots;
		const release = await slots.take(i);
		const reads = closingReads(file);
		try {
			return await read(reads.file);
		} finally {
			await reads.close();
			release();
		}
	}

	/** The id of the credentials' workspace, read once for the run (a trigger URL's token). */
	async workspaceId(i: number): Promise<string> {
		this.account ??= apiRequest<{ workspace: { id: string } }>(this.ctx, 'GET', '/account', {
			itemIndex: i,
		}).then(({ body }) => body.workspace.id);
		return await this.account;
	}

	/**
	 * Marks that this node sends it (a tag, a file's probe) now; whether it may have been marked
	 * before (one write). Without n8n's store (an AI Agent's tool call), `unstored` answers.
	 */
	async markSent(mark: string, unstored = true): Promise<boolean> {
		return this.store ? ((await this.store.record(mark)) ?? true) : unstored;
	}

	/**
	 * The records of this node's orders: the node context's (a Retry copies them), then the
	 * workflow's static data (later executions read them; n8n saves it after production executions).
	 */
	private records(): Array<Record<string, OrderRecord>> {
		const context = this.ctx.getContext('node') as IDataObject;
		const workflow = this.ctx.getWorkflowStaticData('node');
		return [(context.captioningOrderRecords ??= {}), (workflow.orderRecords ??= {})] as Array<
			Record<string, OrderRecord>
		>;
	}

	/** What this node knows of the order of this tag, if anything. */
	recordOf(tag: string): OrderRecord | undefined {
		return this.records()
			.map((records) => records[tag])
			.find((record) => record !== undefined);
	}

	/** Records what became of the order of this tag (undefined: nothing was placed), as the newest. */
	record(tag: string, record: OrderRecord | undefined): void {
		for (const records of this.records()) {
			delete records[tag];
			if (record !== undefined) records[tag] = record;
			const tags = Object.keys(records);
			for (const old of tags.slice(0, Math.max(0, tags.length - KEPT_RECORDS))) delete records[old];
		}
	}

	/**
	 * The mark of an order the service refused or that was never sent: a repeat is a first order
	 * again. Removed while the item's error stops the batch (nothing else is sent meanwhile); the
	 * run ends once it is done (`removalsDone`). A removal that fails leaves the mark: a repeat then
	 * looks first, and never pays twice.
	 */
	unmark(mark: string): void {
		if (this.store) this.removals.push(this.store.remove(mark).catch(() => undefined));
	}

	/** Once every mark removal of the run is done. */
	async removalsDone(): Promise<void> {
		await Promise.all(this.removals);
	}

	/**
	 * The job of an order this node may have sent before: the one its record names (one read), else
	 * the one its tag names among the newest LOOKUP_PAGES pages of the job list, read as lookups need
	 * them, once for the run (`fresh`: no record, the list read anew, as after a 409). Recorded, so
	 * that the next repeat reads it directly.
	 */
	async earlier(i: number, tag: string, fresh = false): Promise<Job | undefined> {
		const record = fresh ? undefined : this.recordOf(tag);
		const read =
			typeof record === 'string'
				? await readJob(this.ctx, record, { itemIndex: i }).catch((error: unknown) => {
						if (notInWorkspace(error)) return undefined;
						throw error as NodeApiError;
					})
				: undefined;
		const scan = fresh ? jobScan(this.ctx) : (this.scan ??= jobScan(this.ctx));
		const earlier = read ?? (await scan((job) => job.metadata?.[ORDER_TAG] === tag));
		if (earlier) this.record(tag, earlier.id);
		return earlier;
	}
}

/**
 * The newest jobs of the workspace, newest first: a lookup reads the pages it needs, and each page
 * is read once for every lookup of the scan. A page that could not be read (after the transport's
 * retries) fails every lookup that reaches it, never "not found".
 */
function jobScan(
	ctx: IExecuteFunctions,
): (match: (job: Job) => boolean) => Promise<Job | undefined> {
	const source = jobPages(ctx);
	const pages: Array<Promise<Job[] | undefined>> = [];
	return async (match) => {
		for (let p = 0; p < LOOKUP_PAGES; p++) {
			const page = await (pages[p] ??= source.next().then((next) => next.value || undefined));
			const hit = page?.find(match);
			if (!page || hit) return hit;
		}
		return undefined;
	};
}
