// What the orders of one node run share: the hints of files sent before, the job pages a lookup of
// an earlier order reads (once for the whole run), and the orders under way, so that equal orders
// of a batch are one POST.
import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';

import type { InputFile } from '../media/binary';
import type { CheckedObject } from '../media/s3Object';
import type { CreateJobBody, Job } from '../model/types';
import { jobPages } from '../transport/jobs';
import { withoutToken } from '../transport/secrets';
import type { S3Access, S3Object } from '../transport/s3';
import { canonicalJson, ORDER_TAG } from './keys';
import { FileHints } from './fileHints';

/** How far back a lookup of an earlier order reads the job list (pages of 100, newest first). */
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

/** What the orders of one node run share: the store, the job pages a lookup read, orders under way. */
export class RunOrders {
	readonly hints: FileHints | undefined;
	private readonly pages: Array<Promise<{ jobs: Job[]; more: boolean }>> = [];
	private pageReader: AsyncGenerator<Job[]> | undefined;
	private readonly underWay = new Map<string, Promise<Placed>>();

	constructor(private readonly ctx: IExecuteFunctions) {
		this.hints = FileHints.of(ctx);
	}

	/** Page n of the job list, read once for the whole run. */
	private async page(n: number): Promise<{ jobs: Job[]; more: boolean }> {
		this.pageReader ??= jobPages(this.ctx, {}, { position: -1 });
		while (this.pages.length <= n) {
			const previous = this.pages.at(-1) ?? Promise.resolve({ jobs: [], more: true });
			const reader = this.pageReader;
			this.pages.push(
				previous.then(async ({ more }) => {
					if (!more) return { jobs: [], more: false };
					const next = await reader.next();
					return next.done
						? { jobs: [], more: false }
						: { jobs: next.value, more: next.value.length > 0 };
				}),
			);
		}
		return await this.pages[n];
	}

	/**
	 * Whether a file of this size and first MiB may have been sent by this node: n8n's deduplication
	 * store records the probe (one write; a hint only: without it the order is still placed once).
	 */
	async maybeSent(probe: string): Promise<boolean> {
		return this.hints ? await this.hints.seenBefore(probe) : true;
	}

	/** The newest job ordered with this order tag (orders/keys.ts), among the newest jobs. */
	async findTagged(tag: string): Promise<Job | undefined> {
		for (let n = 0; n < LOOKUP_PAGES; n++) {
			const { jobs, more } = await this.page(n);
			const hit = jobs.find((job) => job.metadata?.[ORDER_TAG] === tag);
			if (hit) return hit;
			if (!more) return undefined;
		}
		return undefined;
	}

	/**
	 * One POST per key and order in a run: equal orders of a batch share the first one's job (the
	 * others as replays). The same Custom Key with another order is sent, and refused by the service.
	 */
	async shared(key: string, identity: string, place: () => Promise<Placed>): Promise<Placed> {
		const mark = `${key}\n${identity}`;
		const first = this.underWay.get(mark);
		if (first) return { ...(await first), replayed: true };
		const placing = place();
		this.underWay.set(mark, placing);
		return await placing;
	}
}

/** The body without its Webhook URL (an On Webhook order's is the execution's own resume URL). */
export function withoutWebhookUrl(body: CreateJobBody): CreateJobBody {
	const rest = { ...body };
	delete rest.webhook_url;
	return rest;
}

/** Whether a job is this order (the source aside): title, metadata and every option the order sets. */
export function sameOrder(job: Job, body: CreateJobBody): boolean {
	if (body.title !== undefined && job.title !== body.title) return false;
	if (canonicalJson(job.metadata ?? {}) !== canonicalJson(body.metadata ?? {})) return false;
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
