// What the orders of one node run share: the hints of what this node may have sent before, the
// lookup of an earlier order by its tag, Concurrency for the files it reads, and the orders under
// way, so that equal orders of a batch are one POST.
import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';

import type { InputFile } from '../media/binary';
import { closingReads } from '../media/binary';
import type { CheckedObject } from '../media/s3Object';
import type { CreateJobBody, Job } from '../model/types';
import { concurrencyOf, DEFAULT_CONCURRENCY, RunConcurrency } from '../transport/concurrency';
import { jobPages } from '../transport/jobs';
import { withoutToken } from '../transport/secrets';
import type { S3Access, S3Object } from '../transport/s3';
import { canonicalJson, ORDER_TAG } from './keys';
import { SentBefore } from './sentBefore';

/** Where the service does not filter the job list by metadata: how far back a lookup reads (pages of 100). */
export const LOOKUP_PAGES = 10;

/** An item's order, checked and ready: nothing has been sent yet. */
export interface Order {
	body: CreateJobBody;
	file?: InputFile;
	/** An S3 Object source: the object asked for, the link's life, and (after `check`) what its HEAD found. */
	s3?: { object: S3Object; hours: number; checked?: CheckedObject & { access: S3Access } };
	idempotency: 'auto' | 'custom' | 'none';
	customKey?: string;
	wait: 'none' | 'poll' | 'webhook';
	interval: number;
	timeout: number;
	/** On Webhook: the items of the run that place this same order (named in its Webhook URL). */
	group?: string;
}

export interface Placed {
	job: Job;
	replayed: boolean;
	/** An On Webhook order placed by another execution: its events go to that execution's URL. */
	elsewhere?: boolean;
}

/** What the orders of one node run share: the hints, the lookups, the files read, the orders under way. */
export class RunOrders {
	private readonly sentBefore: SentBefore | undefined;
	private readonly underWay = new Map<string, Promise<Placed>>();
	private fileSlots: RunConcurrency | undefined;
	private readonly wholeFileSlot = new RunConcurrency(1);

	constructor(private readonly ctx: IExecuteFunctions) {
		this.sentBefore = SentBefore.of(ctx);
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
		this.fileSlots ??= new RunConcurrency(
			concurrencyOf(this.ctx)?.concurrency ?? DEFAULT_CONCURRENCY,
		);
		const slots = file.binaryId?.startsWith('database:') ? this.wholeFileSlot : this.fileSlots;
		const release = await slots.acquire(i);
		const reads = closingReads(file);
		try {
			return await read(reads.file);
		} finally {
			await reads.close();
			release();
		}
	}

	/** Whether this node may have sent it (a tag, a file's probe) before: recorded now (one write). */
	async maybeSent(hint: string): Promise<boolean> {
		return this.sentBefore ? await this.sentBefore.record(hint) : true;
	}

	/**
	 * The newest job ordered with this tag, read now: the job list filtered by the tag, which holds
	 * it or nothing (one read). A service that does not filter lists every job: then the newest
	 * LOOKUP_PAGES pages are searched.
	 */
	async findTagged(tag: string): Promise<Job | undefined> {
		let pages = 0;
		for await (const page of jobPages(
			this.ctx,
			{ [`metadata[${ORDER_TAG}]`]: tag },
			{ position: -1 },
		)) {
			const hit = page.find((job) => job.metadata?.[ORDER_TAG] === tag);
			if (hit) return hit;
			const filtered = page.every((job) => job.metadata?.[ORDER_TAG] === tag);
			if (filtered || ++pages >= LOOKUP_PAGES) return undefined;
		}
		return undefined;
	}

	/** One POST per order (its tag) in a run: equal orders of a batch share the first one's job (the others as replays). */
	async shared(tag: string, place: () => Promise<Placed>): Promise<Placed> {
		const first = this.underWay.get(tag);
		if (first) return { ...(await first), replayed: true };
		const placing = place();
		this.underWay.set(tag, placing);
		return await placing;
	}
}

/** The body without its Webhook URL (an On Webhook order's is the execution's own resume URL). */
export function withoutWebhookUrl(body: CreateJobBody): CreateJobBody {
	const rest = { ...body };
	delete rest.webhook_url;
	return rest;
}

/** Whether a job is this order (the source aside): title, metadata (the tag aside) and every option the order sets. */
export function sameOrder(job: Job, body: CreateJobBody): boolean {
	if (body.title !== undefined && job.title !== body.title) return false;
	// The job's metadata as the order's own: without the tag the node adds.
	const metadata = { ...(job.metadata ?? {}) };
	delete metadata[ORDER_TAG];
	if (canonicalJson(metadata) !== canonicalJson(body.metadata ?? {})) return false;
	const options = (job.options ?? {}) as IDataObject;
	const fields = [
		'style',
		'model',
		'speaker_labels',
		'speaker_label_style',
		'atmospherics',
		'profanity',
		'glossary',
		'webhook_url',
	] as const;
	// Jobs come back with a Webhook URL's token masked: compared masked.
	const sent = {
		...body,
		webhook_url: body.webhook_url === undefined ? undefined : withoutToken(body.webhook_url),
	};
	if (
		fields.some(
			(f) => sent[f] !== undefined && canonicalJson(options[f]) !== canonicalJson(sent[f]),
		)
	)
		return false;
	if (body.redactions === undefined) return true;
	const redactions = (options.redactions ?? {}) as IDataObject;
	return Object.entries(body.redactions).every(
		([k, v]) => canonicalJson(redactions[k]) === canonicalJson(v),
	);
}
