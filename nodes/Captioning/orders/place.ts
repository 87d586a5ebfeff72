// Placing an order once (docs/paying-once.md): the item's Idempotency-Key (orders/keys.ts), the
// upload a repeat of a Binary File order reuses, an S3 Object's signed link, and the POST /jobs.
// A repeat of a keyed order must send the very same body, upload_id included, or the service
// answers 409. So an upload is remembered under the key and the file's SHA-256: in the node context
// (Retry On Fail, the execution's Retry) and in n8n's deduplication store (re-runs, crashes), where
// a lookup finds it among the upload ids of the newest jobs.
import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';
import { NodeApiError } from 'n8n-workflow';

import type { InputFile } from '../media/binary';
import { fileProbe, fileSha256, hashingReads } from '../media/binary';
import { LINK_HOURS } from '../media/s3Object';
import type { CreateJobBody, Job } from '../model/types';
import { apiRequest } from '../transport';
import { uploadFile } from '../transport/files';
import { readJob } from '../transport/jobs';
import { presignGet } from '../transport/s3';
import { type Order, type OrderDesk, type Placed, withoutWebhookUrl } from './desk';
import { LOOKUP_PAGES } from './desk';
import { automaticKey, canonicalJson, orderFingerprint, orderIdentity } from './keys';

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

/**
 * The order's body as the same order: an On Webhook order without its Webhook URL, which is this
 * execution's own resume URL (another execution repeating the order has another).
 */
function sameOrderBody(order: Order): CreateJobBody {
	return order.wait === 'webhook' ? withoutWebhookUrl(order.body) : order.body;
}

/** An S3 Object order as the same order: the object (store, bucket, key) and the version checked, never the signed link. */
function s3Identity(order: Order): string {
	const { url, version } = order.s3!.checked!;
	return canonicalJson({ ...sameOrderBody(order), s3: { url, version } });
}

/** The item's Idempotency-Key (none with Idempotency: None), from the order and the file's SHA-256. */
function keyOf(ctx: IExecuteFunctions, order: Order, sha?: string): { key?: string; identity: string } {
	if (order.idempotency === 'none') return { identity: '' };
	const identity = order.s3 ? s3Identity(order) : orderIdentity(sameOrderBody(order), sha);
	if (order.idempotency === 'custom') return { key: order.customKey, identity };
	return { key: automaticKey(orderFingerprint(ctx, identity)), identity };
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
	const { key, identity } = keyOf(ctx, order, read?.sha) as { key: string; identity: string };
	return await desk.shared(key, identity, async () => {
		if (file && read) body.upload_id = await uploadFor(ctx, i, file, desk, key, read.sha, read.uploadId);
		if (order.s3) body.media_url = await signedLink(ctx, order, desk, `${key} ${identity}`, key);
		try {
			const response = await apiRequest<Job>(ctx, 'POST', '/jobs', { body: body as IDataObject, idempotencyKey: key, itemIndex: i });
			return { job: response.body, replayed: response.headers['idempotent-replayed'] === 'true' };
		} catch (error) {
			if (!isConflict(error)) throw error as NodeApiError;
			// An On Webhook order repeated by another execution (a re-run, a schedule, the execution's
			// Retry) carries that execution's resume URL, so the service refuses the key's body as
			// another. The earlier job this node ordered with its own resume URL, the same media and
			// options, is this order: answered as the replay. Its events go to the execution that
			// ordered it, so this one waits for it another way (waiting/webhook.ts).
			if (order.wait === 'webhook') {
				const earlier = await desk.findOrderedByThisNode(body, order.s3?.checked?.url);
				if (earlier) return { job: earlier, replayed: true, elsewhere: true };
			}
			// An Automatic key was used with another link to this very object (signed at an hour n8n no
			// longer remembers): the earlier job is this order. Found among the newest jobs, it is answered
			// as the replay. Not for a Custom Key, which may have been used for another object.
			if (order.s3 && order.idempotency === 'auto') {
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
	if (orders[mark]) return { job: await readJob(ctx, orders[mark], { itemIndex: i }), replayed: true };
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
export function replaysOf(order: Order): string {
	if (order.idempotency === 'custom') {
		return 'With a Custom Key, every repeat (Retry On Fail, the execution\'s Retry, a new run) replays these orders instead of paying for them again.';
	}
	if (order.idempotency === 'none') {
		return 'With Idempotency None, Retry On Fail and the execution\'s Retry read these jobs back, but a new run (or the Retry of a crashed execution) orders and pays again.';
	}
	return 'Retry On Fail, the execution\'s Retry and a new run replay these orders instead of paying for them again.';
}
