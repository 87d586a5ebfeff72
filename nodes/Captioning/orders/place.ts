// Placing an order once (README, "Paying once"): the item's Idempotency-Key (helpers/idempotency.ts),
// the upload a repeat of a Binary File order reuses, and the POST /jobs itself.
// A repeat of a keyed order must send the very same body, upload_id included, or the service
// answers 409. So an upload is remembered under the key and the file's SHA-256: in the node context
// (Retry On Fail, the execution's Retry) and in n8n's deduplication store (re-runs, crashes), where
// a lookup finds it among the upload ids of the newest jobs.
import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';
import { NodeApiError } from 'n8n-workflow';

import { apiRequest, jobPages, segment } from '../transport';
import { uploadFile } from '../transport/files';
import type { InputFile } from './binary';
import { fileProbe, fileSha256, hashingReads } from './binary';
import { automaticKey, canonicalJson, generationKey, orderFingerprint, orderIdentity } from './idempotency';
import { Remembered } from './remembered';
import type { CheckedObject } from './s3Source';
import { LINK_HOURS } from './s3Source';
import type { S3Access, S3Object } from '../transport/s3';
import { presignGet } from '../transport/s3';
import type { CreateJobBody, Job } from './types';

/** How far back a lookup of an earlier upload reads the job list (pages of 100, newest first). */
const LOOKUP_PAGES = 10;

/** An item's order, checked and ready: nothing has been sent yet. */
export interface Order {
	body: CreateJobBody;
	file?: InputFile;
	/** An S3 Object source: the object asked for, the link's life, and (after `check`) what its HEAD found. */
	s3?: { object: S3Object; hours: number; checked?: CheckedObject & { access: S3Access } };
	idempotency: 'auto' | 'custom' | 'none';
	customKey?: string;
	/** Versions 1 and 1.1: the how-manieth equal order of this run this is (they stay apart). */
	occurrence?: number;
	wait: 'none' | 'poll' | 'webhook';
	interval: number;
	timeout: number;
}

export interface Placed {
	job: Job;
	replayed: boolean;
}

/** What the orders of one node run share: the store, the job pages a lookup read, orders under way. */
export class OrderDesk {
	readonly remembered: Remembered | undefined;
	private readonly pages: Array<Promise<{ jobs: Job[]; more: boolean }>> = [];
	private pageReader: AsyncGenerator<Job[]> | undefined;
	private readonly underWay = new Map<string, Promise<Placed>>();

	constructor(private readonly ctx: IExecuteFunctions) {
		this.remembered = Remembered.of(ctx);
	}

	/** Page n of the job list, read once for the whole run. */
	private async page(n: number): Promise<{ jobs: Job[]; more: boolean }> {
		this.pageReader ??= jobPages(this.ctx, {}, { priority: -1 });
		while (this.pages.length <= n) {
			const previous = this.pages.at(-1) ?? Promise.resolve({ jobs: [], more: true });
			const reader = this.pageReader;
			this.pages.push(
				previous.then(async ({ more }) => {
					if (!more) return { jobs: [], more: false };
					const next = await reader.next();
					return next.done ? { jobs: [], more: false } : { jobs: next.value, more: next.value.length > 0 };
				}),
			);
		}
		return await this.pages[n];
	}

	/** The upload that carried this file for this key before, among the newest jobs' uploads. */
	async findUpload(key: string, sha: string): Promise<string | undefined> {
		const remembered = this.remembered;
		if (!remembered) return undefined;
		for (let n = 0; n < LOOKUP_PAGES; n++) {
			const { jobs, more } = await this.page(n);
			const candidates = jobs.filter((job) => job.media?.type === 'upload' && job.media.upload_id).map((job) => `upload ${key} ${sha} ${job.media.upload_id}`);
			if (candidates.length) {
				const [hit] = await remembered.known(candidates);
				if (hit) return hit.split(' ').at(-1);
			}
			if (!more) return undefined;
		}
		return undefined;
	}

	/**
	 * The earlier job of an S3 Object order, among the newest jobs: the same object (its URL without
	 * the signature, as the transport hands jobs on) and the same title, metadata and options.
	 */
	async findS3Job(url: string, body: CreateJobBody): Promise<Job | undefined> {
		for (let n = 0; n < LOOKUP_PAGES; n++) {
			const { jobs, more } = await this.page(n);
			const hit = jobs.find((job) => job.media?.type === 'url' && job.media.url === url && sameOrder(job, body));
			if (hit) return hit;
			if (!more) return undefined;
		}
		return undefined;
	}

	private readonly seen = new Map<string, number>();

	/** Versions 1 and 1.1: how many equal orders came before this one in the run (items are prepared in input order). */
	occurrence(order: Order): number {
		const mark = `${orderIdentity(order.body)}\n${order.file?.identity ?? order.s3?.object.bucket ?? ''}\n${order.s3?.object.key ?? ''}`;
		const n = this.seen.get(mark) ?? 0;
		this.seen.set(mark, n + 1);
		return n;
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


/** Whether a job is this order (the source aside): title, metadata and every option the order sets. */
function sameOrder(job: Job, body: CreateJobBody): boolean {
	if (body.title !== undefined && job.title !== body.title) return false;
	if (canonicalJson(job.metadata ?? {}) !== canonicalJson(body.metadata ?? {})) return false;
	const options = (job.options ?? {}) as IDataObject;
	const fields = ['style', 'model', 'speaker_labels', 'speaker_label_style', 'atmospherics', 'profanity', 'glossary', 'webhook_url'] as const;
	if (fields.some((f) => body[f] !== undefined && canonicalJson(options[f]) !== canonicalJson(body[f]))) return false;
	if (body.redactions === undefined) return true;
	const redactions = (options.redactions ?? {}) as IDataObject;
	return Object.entries(body.redactions).every(([k, v]) => canonicalJson(redactions[k]) === canonicalJson(v));
}

const HOUR = 3600 * 1000;

/**
 * The hour an S3 Object order's link is signed at. A repeat must send the very same link, or the
 * service refuses it (409): so the link is signed at the start of an hour (valid that much longer)
 * and the hour is remembered, in the node context (Retry On Fail, the execution's Retry) and, per
 * key, in n8n's deduplication store (new runs, crashes), where a lookup tries the last week's hours.
 */
async function signingHour(ctx: IExecuteFunctions, desk: OrderDesk, mark: string, key?: string): Promise<number> {
	const context = ctx.getContext('node') as IDataObject;
	const signed = (context.captioningSigned ??= {}) as Record<string, number>;
	if (signed[mark]) return signed[mark];
	const now = Math.floor(Date.now() / HOUR) * HOUR;
	let hour = now;
	if (key && desk.remembered) {
		// One call for an order never placed (the common case): it records the key and this hour.
		const ordered = `s3key ${key}`;
		const thisHour = `s3link ${key} ${now}`;
		const before = await desk.remembered.record([ordered, thisHour]);
		if (before.has(ordered)) {
			// Placed before: the hour of its first link, the oldest one remembered within the week.
			const hours = Array.from({ length: LINK_HOURS.max + 1 }, (_, n) => `s3link ${key} ${now - (LINK_HOURS.max - n) * HOUR}`);
			const known = await desk.remembered.known(hours);
			const oldest = hours.find((sentence) => known.has(sentence) && (sentence !== thisHour || before.has(thisHour)));
			if (oldest) {
				hour = Number(oldest.split(' ').at(-1));
				if (!before.has(thisHour)) await desk.remembered.forget([thisHour]);
			}
		}
	}
	return (signed[mark] = hour);
}

/** The S3 Object order's media_url: the object as checked, signed at its hour, valid an hour more than asked. */
async function signedLink(ctx: IExecuteFunctions, order: Order, desk: OrderDesk, mark: string, key?: string): Promise<string> {
	const { checked, hours } = order.s3!;
	const hour = await signingHour(ctx, desk, mark, key);
	return presignGet(checked!.access, checked!.object, (hours + 1) * 3600, new Date(hour));
}

/** The node context's memory of files this execution read: their SHA-256 by binary identity. */
function digestsOf(ctx: IExecuteFunctions): Record<string, string> {
	const context = ctx.getContext('node') as IDataObject;
	return (context.captioningDigests ??= {}) as Record<string, string>;
}

/** The uploads this execution made or found, by key and SHA-256 (Retry On Fail, the execution's Retry). */
function uploadsOf(ctx: IExecuteFunctions): Record<string, string> {
	const context = ctx.getContext('node') as IDataObject;
	return (context.captioningUploads ??= {}) as Record<string, string>;
}

/** An S3 Object order as the same order: the object (store, bucket, key) and the version checked, never the signed link. */
function s3Identity(order: Order): string {
	const { url, version } = order.s3!.checked!;
	return canonicalJson({ ...order.body, s3: { url, version } });
}

/** The item's Idempotency-Key (none with Idempotency: None), from the order and the file's SHA-256. */
async function keyOf(ctx: IExecuteFunctions, order: Order, desk: OrderDesk, sha?: string): Promise<{ key?: string; identity: string }> {
	if (order.idempotency === 'none') return { identity: '' };
	const identity = order.s3 ? s3Identity(order) : orderIdentity(order.body, sha);
	if (order.idempotency === 'custom') return { key: order.customKey, identity };
	if (ctx.getNode().typeVersion >= 1.2) return { key: automaticKey(orderFingerprint(ctx, identity)), identity };
	return { key: await generationKey(ctx, orderFingerprint(ctx, identity, order.occurrence), desk.remembered), identity };
}

/**
 * A keyed Binary File order's file: its SHA-256 and, when this node has never sent a file like it,
 * its upload. The first MiB and the size tell a file never sent (upload at once, hashing the bytes
 * on their way: one read) from one that may have been (hash first, then look for its upload).
 */
async function readFile(ctx: IExecuteFunctions, i: number, file: InputFile, desk: OrderDesk): Promise<{ sha: string; uploadId?: string }> {
	const digests = digestsOf(ctx);
	if (digests[file.identity]) return { sha: digests[file.identity] };
	const probe = await fileProbe(file);
	const maybeSent = desk.remembered ? (await desk.remembered.record([`probe ${probe}`])).size > 0 : true;
	if (maybeSent) {
		digests[file.identity] = await fileSha256(file);
		return { sha: digests[file.identity] };
	}
	const hashing = hashingReads(file);
	const uploadId = (await uploadFile(ctx, hashing.file, i)).id;
	digests[file.identity] = hashing.sha256();
	return { sha: digests[file.identity], uploadId };
}

/**
 * The upload id for a keyed Binary File order: the one this key already carried this file with (so
 * a repeat sends the same body and is replayed), or a new upload; remembered either way.
 */
async function uploadFor(ctx: IExecuteFunctions, i: number, file: InputFile, desk: OrderDesk, key: string, sha: string, fresh?: string): Promise<string> {
	const uploads = uploadsOf(ctx);
	const mark = `${key} ${sha}`;
	if (uploads[mark]) return uploads[mark];
	const known = await desk.remembered?.record([`file ${key} ${sha}`]);
	if (!fresh && known && known.size > 0) {
		const earlier = await desk.findUpload(key, sha);
		if (earlier) return (uploads[mark] = earlier);
	}
	const uploadId = fresh ?? (await uploadFile(ctx, file, i)).id;
	await desk.remembered?.record([`upload ${key} ${sha} ${uploadId}`]);
	return (uploads[mark] = uploadId);
}

/**
 * Sends the order. With a key, every repeat is replayed by the service; without one, a Retry On
 * Fail (or the execution's Retry) reads back the job this execution already ordered.
 */
export async function placeOrder(ctx: IExecuteFunctions, i: number, order: Order, desk: OrderDesk): Promise<Placed> {
	const body = { ...order.body };
	const file = order.file;
	if (order.idempotency === 'none') {
		if (file) {
			// Kept for this execution and item only, so that a Retry On Fail sends the same order.
			const uploads = uploadsOf(ctx);
			uploads[`${i}:${file.identity}`] ??= (await uploadFile(ctx, file, i)).id;
			body.upload_id = uploads[`${i}:${file.identity}`];
		}
		if (order.s3) body.media_url = await signedLink(ctx, order, desk, `${i} ${s3Identity(order)}`);
		return await placeWithoutKey(ctx, i, body);
	}
	const read = file ? await readFile(ctx, i, file, desk) : undefined;
	const { key, identity } = (await keyOf(ctx, order, desk, read?.sha)) as { key: string; identity: string };
	return await desk.shared(key, identity, async () => {
		if (file && read) body.upload_id = await uploadFor(ctx, i, file, desk, key, read.sha, read.uploadId);
		if (order.s3) body.media_url = await signedLink(ctx, order, desk, `${key} ${identity}`, key);
		try {
			const response = await apiRequest<Job>(ctx, 'POST', '/jobs', { body: body as IDataObject, idempotencyKey: key, itemIndex: i });
			return { job: response.body, replayed: response.headers['idempotent-replayed'] === 'true' };
		} catch (error) {
			// An Automatic key was used with another link to this very object (signed at an hour n8n no
			// longer remembers): the earlier job is this order. Found among the newest jobs, it is answered
			// as the replay. Not for a Custom Key, which may have been used for another object.
			if (order.s3 && order.idempotency === 'auto' && isConflict(error)) {
				const earlier = await desk.findS3Job(order.s3.checked!.url, order.body);
				if (earlier) return { job: earlier, replayed: true };
			}
			throw explainConflict(error, order);
		}
	});
}

async function placeWithoutKey(ctx: IExecuteFunctions, i: number, body: CreateJobBody): Promise<Placed> {
	const context = ctx.getContext('node') as IDataObject;
	const orders = (context.captioningOrders ??= {}) as Record<string, string>;
	const mark = `${i}:${canonicalJson(body)}`;
	if (orders[mark]) return { job: (await apiRequest<Job>(ctx, 'GET', `/jobs/${segment(orders[mark])}`, { itemIndex: i })).body, replayed: true };
	const response = await apiRequest<Job>(ctx, 'POST', '/jobs', { body: body as IDataObject, itemIndex: i });
	orders[mark] = response.body.id;
	return { job: response.body, replayed: false };
}

function isConflict(error: unknown): error is NodeApiError {
	return error instanceof NodeApiError && (error.context as IDataObject).code === 'idempotency_conflict';
}

/** A 409 idempotency_conflict says what was different, and what to do, for the key in use. */
function explainConflict(error: unknown, order: Order): unknown {
	if (!isConflict(error)) return error;
	if (order.s3) {
		const name = `s3://${order.s3.object.bucket}/${order.s3.object.key}`;
		error.description =
			order.idempotency === 'custom'
				? `The Idempotency Key "${order.customKey}" was used before for a different order than ${name} with these options (or by another workflow, or more than a week ago, so that the link it was sent with cannot be signed again). A key names one order: use one per object (e.g. its ETag), or put a version in it (…-v2) to order again on purpose.`
				: `${name} was ordered by this node before, but that job is not among the ${LOOKUP_PAGES * 100} newest, so it could not be answered as the replay, and the service refused a second order: nothing was ordered twice. Find the first job with Job → Get Many; to order the object again on purpose, set Idempotency to Custom Key with a new key.`;
		return error;
	}
	if (order.idempotency === 'custom') {
		error.description = order.file
			? `The Idempotency Key "${order.customKey}" was used before for a different order: another file, or other options. A key names one order: use one per file (e.g. its Drive file ID or S3 ETag), or put a version in it (…-v2) to order this file again on purpose.`
			: `The Idempotency Key "${order.customKey}" was used before for a different order (another Media URL, Upload ID or other options). A key names one order: use one per media, or put a version in it (…-v2) to order again on purpose.`;
	} else if (order.file) {
		error.description = `This file was ordered by this node before, but its upload is not among the ${LOOKUP_PAGES * 100} newest jobs' (or n8n no longer remembers it), so the order went out with a new upload and the service refused it: nothing was ordered twice. Find the first job with Job → Get Many; to order the file again on purpose, set Idempotency to Custom Key with a new key.`;
	}
	return error;
}

/** Which repeats of an order replay it rather than pay again, as a stopped batch's error says it. */
export function replaysOf(ctx: IExecuteFunctions, order: Order): string {
	if (order.idempotency === 'custom') {
		return 'With a Custom Key, every repeat (Retry On Fail, the execution\'s Retry, a new run) replays these orders instead of paying for them again.';
	}
	if (order.idempotency === 'none') {
		return 'With Idempotency None, Retry On Fail and the execution\'s Retry read these jobs back, but a new run (or the Retry of a crashed execution) orders and pays again.';
	}
	return ctx.getNode().typeVersion >= 1.2
		? 'Retry On Fail, the execution\'s Retry and a new run replay these orders instead of paying for them again.'
		: 'Retry On Fail and the execution\'s Retry (also of a crashed execution) replay these orders instead of paying for them again; a new run orders them again (node version 1.2 replays it too).';
}
