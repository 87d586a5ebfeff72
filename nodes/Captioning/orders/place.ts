// Placing an order once (docs/paying-once.md): the item's Idempotency-Key (orders/keys.ts), the
// upload a repeat of a Binary File order reuses, an S3 Object's signed link, and the POST /jobs.
// A repeat of a keyed order must send the very same body, upload_id included, or the service
// answers 409. The node context keeps what this execution sent (Retry On Fail, the execution's
// Retry); across executions the service's job list is the record: every keyed order carries a tag
// of its key in its metadata (ORDER_TAG), so a repeat finds the earlier order of its key: a Binary
// File's upload, to send the same body; the job itself when the service refuses a body that differs
// only in what this execution has (its On Webhook resume URL, an S3 link signed now).
import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';
import { NodeApiError } from 'n8n-workflow';
import { createHash } from 'node:crypto';

import type { InputFile } from '../media/binary';
import { fileProbe, fileSha256, hashingReads } from '../media/binary';
import type { CreateJobBody, Job } from '../model/types';
import { apiRequest } from '../transport';
import { uploadFile } from '../transport/files';
import { readJob } from '../transport/jobs';
import { presignGet } from '../transport/s3';
import { withoutToken } from '../transport/secrets';
import {
	LOOKUP_PAGES,
	type Order,
	type RunOrders,
	type Placed,
	sameOrder,
	withoutWebhookUrl,
} from './runOrders';
import {
	automaticKey,
	canonicalJson,
	ORDER_TAG,
	orderFingerprint,
	orderIdentity,
	orderTag,
} from './keys';

const HOUR = 3600 * 1000;

const digest = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 32);

/** When this execution signed an S3 Object order's link (ms), by order: the link is made again from it. */
type Signed = Record<string, number>;

/**
 * The S3 Object order's media_url: the object as checked, signed now, valid an hour more than asked,
 * so that a Retry within that hour sends the very same link (signed again from the same moment: a
 * signature is the same for the same moment, so the node context keeps the moment, never the
 * link) with at least what was asked left. Another execution signs anew; the service then refuses
 * the key's other body (409) and the earlier job of the object is the replay (placeOrder).
 */
function signedLink(ctx: IExecuteFunctions, order: Order, mark: string): string {
	const signed = ((ctx.getContext('node') as IDataObject).captioningSigned ??= {}) as Signed;
	const { checked, hours } = order.s3!;
	const seconds = (hours + 1) * 3600;
	const at = signed[mark];
	const signedAt =
		at !== undefined && at + seconds * 1000 - Date.now() >= hours * HOUR ? at : Date.now();
	signed[mark] = signedAt;
	return presignGet(checked!.access, checked!.object, seconds, new Date(signedAt));
}

/** A refused order (an answer, not a lost one) forgets the link it sent: nothing repeats it. */
function forgetLink(ctx: IExecuteFunctions, mark: string): void {
	delete ((ctx.getContext('node') as IDataObject).captioningSigned as Signed | undefined)?.[mark];
}

/** The node context's memory of files this execution read: their SHA-256 by binary-store id. */
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
function keyOf(
	ctx: IExecuteFunctions,
	order: Order,
	sha?: string,
): { key?: string; identity: string } {
	if (order.idempotency === 'none') return { identity: '' };
	const identity = order.s3 ? s3Identity(order) : orderIdentity(sameOrderBody(order), sha);
	if (order.idempotency === 'custom') return { key: order.customKey, identity };
	return { key: automaticKey(orderFingerprint(ctx, identity)), identity };
}

/**
 * A keyed Binary File order's file: its SHA-256 and, when no file like it was sent before, its
 * upload. The size and first MiB, recorded in n8n's deduplication store (a hint, written once),
 * tell a file never sent (upload at once, hashing the bytes on their way: one read) from one that
 * may have been (hash first, then look for its upload). Only a file with a binary-store id is known
 * by that id within the execution; others are hashed (two files may share a name and size).
 */
async function readFile(
	ctx: IExecuteFunctions,
	i: number,
	file: InputFile,
	orders: RunOrders,
): Promise<{ sha: string; uploadId?: string }> {
	const digests = digestsOf(ctx);
	if (file.binaryId && digests[file.binaryId]) return { sha: digests[file.binaryId] };
	const remember = (sha: string) => (file.binaryId ? (digests[file.binaryId] = sha) : sha);
	const probe = await fileProbe(file);
	if (await orders.maybeSent(probe)) return { sha: remember(await fileSha256(file)) };
	const hashing = hashingReads(file);
	const uploadId = (await uploadFile(ctx, hashing.file, i)).id;
	return { sha: remember(hashing.sha256()), uploadId };
}

/**
 * The upload id for a keyed Binary File order: the one this execution used, the one the earlier
 * order of this key and these bytes used (found by its tag among the newest jobs: a repeat sends the
 * same body and is replayed), or a new upload.
 */
async function uploadFor(
	ctx: IExecuteFunctions,
	i: number,
	file: InputFile,
	orders: RunOrders,
	mark: string,
	tag: string,
	fresh?: string,
): Promise<string> {
	const uploads = uploadsOf(ctx);
	uploads[mark] ??=
		fresh ?? (await orders.findTagged(tag))?.media.upload_id ?? (await uploadFile(ctx, file, i)).id;
	return uploads[mark];
}

/** The order's metadata with its tag (ORDER_TAG), when the metadata has room (20 keys by default). */
function tagged(body: CreateJobBody, tag: string): CreateJobBody['metadata'] {
	const metadata = body.metadata ?? {};
	return Object.keys(metadata).length < 20 ? { ...metadata, [ORDER_TAG]: tag } : body.metadata;
}

/** Whether the earlier job is this order: its media (a file by its tag) and its options, the Webhook URL aside. */
function isThisOrder(job: Job, order: Order, body: CreateJobBody): boolean {
	const media = order.s3
		? job.media?.url === order.s3.checked!.url
		: order.file
			? true
			: body.upload_id !== undefined
				? job.media?.upload_id === body.upload_id
				: job.media?.url === body.media_url;
	return media && sameOrder(job, withoutWebhookUrl(body));
}

/**
 * Sends the order. With a key, every repeat is replayed by the service; without one, a Retry On
 * Fail (or the execution's Retry) reads back the job this execution already ordered.
 */
export async function placeOrder(
	ctx: IExecuteFunctions,
	i: number,
	order: Order,
	orders: RunOrders,
): Promise<Placed> {
	const body = { ...order.body };
	const file = order.file;
	if (order.idempotency === 'none') {
		if (file) {
			// Kept for this execution and item only, so that a Retry On Fail sends the same order.
			const uploads = uploadsOf(ctx);
			uploads[`${i}:${file.identity}`] ??= (await uploadFile(ctx, file, i)).id;
			body.upload_id = uploads[`${i}:${file.identity}`];
		}
		if (order.s3) body.media_url = signedLink(ctx, order, digest(`${i}\n${s3Identity(order)}`));
		return await placeWithoutKey(ctx, i, body);
	}
	const read = file ? await readFile(ctx, i, file, orders) : undefined;
	const { key, identity } = keyOf(ctx, order, read?.sha) as { key: string; identity: string };
	// The node context keeps what a repeat needs by a digest of the order, never the order itself.
	const mark = digest(`${key}\n${identity}`);
	const tag = orderTag(key, read?.sha);
	return await orders.shared(key, identity, async () => {
		body.metadata = tagged(body, tag);
		if (file) body.upload_id = await uploadFor(ctx, i, file, orders, mark, tag, read?.uploadId);
		if (order.s3) body.media_url = signedLink(ctx, order, mark);
		try {
			return await post(ctx, i, body, key);
		} catch (error) {
			if (!isConflict(error)) {
				// Refused (an answer, not a lost one): a repeat signs anew.
				if (order.s3 && error instanceof NodeApiError && error.httpCode) forgetLink(ctx, mark);
				throw error as NodeApiError;
			}
			// The key's earlier order differs from this body only in what this execution has (its On
			// Webhook resume URL, an S3 link signed now): it is this order, answered as the replay. An On
			// Webhook order's events go to the execution that ordered it: this one waits another way.
			const earlier = await orders.findTagged(tag);
			if (earlier && isThisOrder(earlier, order, body)) {
				return {
					job: earlier,
					replayed: true,
					elsewhere:
						order.wait === 'webhook' &&
						earlier.options?.webhook_url !== withoutToken(body.webhook_url ?? ''),
				};
			}
			throw explainConflict(error, order);
		}
	});
}

async function post(
	ctx: IExecuteFunctions,
	i: number,
	body: CreateJobBody,
	key: string,
): Promise<Placed> {
	const response = await apiRequest<Job>(ctx, 'POST', '/jobs', {
		body: body as IDataObject,
		idempotencyKey: key,
		itemIndex: i,
	});
	return { job: response.body, replayed: response.headers['idempotent-replayed'] === 'true' };
}

async function placeWithoutKey(
	ctx: IExecuteFunctions,
	i: number,
	body: CreateJobBody,
): Promise<Placed> {
	const context = ctx.getContext('node') as IDataObject;
	const orders = (context.captioningOrders ??= {}) as Record<string, string>;
	const mark = `${i}:${digest(canonicalJson(body))}`;
	if (orders[mark])
		return { job: await readJob(ctx, orders[mark], { itemIndex: i }), replayed: true };
	const response = await apiRequest<Job>(ctx, 'POST', '/jobs', {
		body: body as IDataObject,
		itemIndex: i,
	});
	orders[mark] = response.body.id;
	return { job: response.body, replayed: false };
}

function isConflict(error: unknown): error is NodeApiError {
	return (
		error instanceof NodeApiError && (error.context as IDataObject).code === 'idempotency_conflict'
	);
}

/** A 409 idempotency_conflict says what was different, and what to do, for the key in use. */
function explainConflict(error: unknown, order: Order): unknown {
	if (!isConflict(error)) return error;
	if (order.s3) {
		const name = `s3://${order.s3.object.bucket}/${order.s3.object.key}`;
		error.description =
			order.idempotency === 'custom'
				? `The Idempotency Key "${order.customKey}" was used before for a different order than ${name} with these options (or by another workflow), and no job of this object and options is among the ${LOOKUP_PAGES * 100} newest. A key names one order: use one per object (e.g. its ETag), or put a version in it (…-v2) to order again on purpose.`
				: `${name} was ordered by this node before, but that job is not among the ${LOOKUP_PAGES * 100} newest, so it could not be answered as the replay, and the service refused a second order: nothing was ordered twice. Find the first job with Job → Get Many; to order the object again on purpose, set Idempotency to Custom Key with a new key.`;
		return error;
	}
	if (order.idempotency === 'custom') {
		error.description = order.file
			? `The Idempotency Key "${order.customKey}" was used before for a different order: another file, or other options. A key names one order: use one per file (e.g. its Drive file ID or S3 ETag), or put a version in it (…-v2) to order this file again on purpose.`
			: `The Idempotency Key "${order.customKey}" was used before for a different order (another Media URL, Upload ID or other options). A key names one order: use one per media, or put a version in it (…-v2) to order again on purpose.`;
	} else if (order.file) {
		error.description = `This file was ordered by this node before, but that job is not among the ${LOOKUP_PAGES * 100} newest, so the order went out with a new upload and the service refused it: nothing was ordered twice. Find the first job with Job → Get Many; to order the file again on purpose, set Idempotency to Custom Key with a new key.`;
	}
	return error;
}

/** Which repeats of an order replay it rather than pay again, as a stopped batch's error says it. */
export function replaysOf(order: Order): string {
	if (order.idempotency === 'custom') {
		return "With a Custom Key, every repeat (Retry On Fail, the execution's Retry, a new run) replays these orders instead of paying for them again.";
	}
	if (order.idempotency === 'none') {
		return "With Idempotency None, Retry On Fail and the execution's Retry read these jobs back, but a new run (or the Retry of a crashed execution) orders and pays again.";
	}
	return "Retry On Fail, the execution's Retry and a new run replay these orders instead of paying for them again.";
}
