// Placing an order once (docs/paying-once.md). A keyed order has one name, its tag (orders/keys.ts),
// carried in its metadata: the service's job list is the record of what was ordered. A first order
// looks nothing up (n8n's deduplication store says this node never sent it) and its POST carries
// the Idempotency-Key, which the service is relied on to keep only for that request's own retries.
// A repeat (Retry On Fail, the execution's Retry, a re-run, a schedule) looks for the earlier job
// among the newest jobs and gets it back without a second POST; where it is not found, the order
// may have been placed all the same, so the repeat stops with an error and never pays again. A file
// is read (probed, hashed, uploaded) within the run's Concurrency; the node context keeps, by tag,
// what a Retry needs (the upload of a file order), never the order itself.
import type { IDataObject, IExecuteFunctions, NodeApiError } from 'n8n-workflow';
import { createHash } from 'node:crypto';

import type { InputFile } from '../media/binary';
import { fileProbe, fileSha256, hashingReads } from '../media/binary';
import type { CreateJobBody, Job } from '../model/types';
import { apiRequest } from '../transport';
import { uploadFile } from '../transport/files';
import { readJob } from '../transport/jobs';
import { presignGet } from '../transport/s3';
import { withoutToken } from '../transport/secrets';
import { serviceOf } from '../transport/service';
import { explainConflict, isConflict, maybeOrdered, notFound } from './refusals';
import type { Order, Placed, RunOrders } from './runOrders';
import { sameOrder, withoutWebhookUrl } from './runOrders';
import { automaticKey, canonicalJson, ORDER_TAG, orderIdentity, orderTag } from './keys';
import { tagFits, tagRefused } from './metadataLimits';

const digest = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 32);

/** What the node context keeps for a Retry, by order: its upload; a file's hash by its binary-store id. */
function kept(ctx: IExecuteFunctions): {
	uploads: Record<string, string>;
	digests: Record<string, string>;
} {
	const context = ctx.getContext('node') as IDataObject;
	return {
		uploads: (context.captioningUploads ??= {}) as Record<string, string>,
		digests: (context.captioningDigests ??= {}) as Record<string, string>,
	};
}

/**
 * The S3 Object order's media_url: the object as checked, signed now, valid an hour more than asked
 * (the service may start fetching it some time after the order). A repeat is found by the order's
 * tag, which names the object, never the link.
 */
function signedLink(order: Order): string {
	const { checked, hours } = order.s3!;
	return presignGet(checked!.access, checked!.object, (hours + 1) * 3600, new Date());
}

/** An On Webhook order as the same order: without its Webhook URL, this execution's own resume URL. */
function sameOrderBody(order: Order): CreateJobBody {
	return order.wait === 'webhook' ? withoutWebhookUrl(order.body) : order.body;
}

/** The item's key and tag (orders/keys.ts), from the order and the file's SHA-256. */
function keyOf(ctx: IExecuteFunctions, order: Order, sha?: string): { key: string; tag: string } {
	const identity = order.s3
		? canonicalJson({
				...sameOrderBody(order),
				s3: order.s3.checked!.url,
				version: order.s3.checked!.version,
			})
		: orderIdentity(sameOrderBody(order), sha);
	const key = order.idempotency === 'custom' ? order.customKey! : automaticKey(ctx, identity);
	return { key, tag: orderTag(key, identity) };
}

/** A file as a keyed order reads it: its SHA-256, and its upload where it was never sent. */
interface ReadFile {
	sha: string;
	uploadId?: string;
}

/**
 * A keyed Binary File order's file, within the run's Concurrency for files. The size and first MiB,
 * recorded in n8n's deduplication store (a hint), tell a file never sent (uploaded at once, hashed
 * on its way: one read) from one that may have been (hashed first, uploaded only if its order was
 * never sent).
 * A file with a binary-store id is hashed once an execution.
 */
async function readFile(
	ctx: IExecuteFunctions,
	i: number,
	file: InputFile,
	orders: RunOrders,
): Promise<ReadFile> {
	const { digests } = kept(ctx);
	const known = file.binaryId ? digests[file.binaryId] : undefined;
	if (known) return { sha: known };
	const remember = (sha: string) => (file.binaryId ? (digests[file.binaryId] = sha) : sha);
	return await orders.readingFile(i, file, async (reading) => {
		if (await orders.maybeSent(`probe ${await fileProbe(reading)}`))
			return { sha: remember(await fileSha256(reading)) };
		const hashing = hashingReads(reading);
		const uploadId = (await uploadFile(ctx, hashing.file, i)).id;
		return { sha: remember(hashing.sha256()), uploadId };
	});
}

/**
 * Whether a job is this order: its tag names the whole order. An order the workspace took untagged
 * (one metadata key too many) counts by its media and options, the Webhook URL aside; a file by
 * the upload this execution made for it.
 */
function isThisOrder(ctx: IExecuteFunctions, job: Job, order: Order, tag: string): boolean {
	const jobTag = job.metadata?.[ORDER_TAG];
	if (jobTag !== undefined) return jobTag === tag;
	const { body } = order;
	const media = order.s3
		? job.media?.url === order.s3.checked!.url
		: order.file
			? job.media?.upload_id === kept(ctx).uploads[tag]
			: body.upload_id !== undefined
				? job.media?.upload_id === body.upload_id
				: job.media?.url === body.media_url;
	return media && sameOrder(job, withoutWebhookUrl(body));
}

/** The earlier job of this order, answered as its replay (an On Webhook one ordered by another execution says so). */
function replayOf(job: Job, order: Order): Placed {
	return {
		job,
		replayed: true,
		elsewhere:
			order.wait === 'webhook' &&
			job.options?.webhook_url !== withoutToken(order.body.webhook_url ?? ''),
	};
}

/** A Captioning Trigger's URL (its path ends in /captioning) carries the credentials' Webhook Secret Token. */
function withWebhookToken(body: CreateJobBody, token: string | undefined): void {
	if (!body.webhook_url || !token) return;
	const url = new URL(body.webhook_url);
	if (!url.pathname.endsWith('/captioning') || url.searchParams.has('token')) return;
	url.searchParams.set('token', token);
	body.webhook_url = url.toString();
}

/** The body to POST: tagged, its upload (this execution's, or a new one), its S3 link. */
async function bodyOf(
	ctx: IExecuteFunctions,
	i: number,
	order: Order,
	tag: string,
	orders: RunOrders,
	uploadId?: string,
): Promise<CreateJobBody> {
	const body: CreateJobBody = { ...order.body };
	const { identity, webhookToken } = await serviceOf(ctx, i);
	withWebhookToken(body, webhookToken);
	const metadata = { ...(body.metadata ?? {}), [ORDER_TAG]: tag };
	if (tagFits(identity, Object.keys(metadata).length)) body.metadata = metadata;
	if (order.file) {
		const { uploads } = kept(ctx);
		uploads[tag] ??=
			uploadId ??
			(await orders.readingFile(
				i,
				order.file,
				async (file) => (await uploadFile(ctx, file, i)).id,
			));
		body.upload_id = uploads[tag];
	}
	if (order.s3) body.media_url = signedLink(order);
	return body;
}

/**
 * Sends the order once. With a key: a repeat gets its earlier order back unsent, or stops where
 * that is not found; a first order is POSTed, guarded by the key. Without one, a Retry On Fail (or
 * the execution's Retry) reads back the job this execution already ordered.
 */
export async function placeOrder(
	ctx: IExecuteFunctions,
	i: number,
	order: Order,
	orders: RunOrders,
): Promise<Placed> {
	if (order.idempotency === 'none') return await placeWithoutKey(ctx, i, order, orders);
	const file = order.file ? await readFile(ctx, i, order.file, orders) : undefined;
	const { key, tag } = keyOf(ctx, order, file?.sha);
	const thisOrder = (job: Job) => isThisOrder(ctx, job, order, tag);
	return await orders.shared(tag, async () => {
		const hint = `order ${tag}`;
		if (await orders.maybeSent(hint)) {
			const earlier = await orders.earlier(thisOrder);
			if (earlier) return replayOf(earlier, order);
			throw notFound(ctx, i, order, tag);
		}
		let body: CreateJobBody;
		try {
			body = await bodyOf(ctx, i, order, tag, orders, file?.uploadId);
		} catch (error) {
			await orders.notSent(hint);
			throw error as NodeApiError;
		}
		let unanswered = false;
		try {
			return await post(ctx, i, body, key, () => (unanswered = true));
		} catch (error) {
			// Every attempt refused (the service's answer taken at its word) or never sent (the batch
			// stopped first, the host unreachable): nothing was ordered. A 409 names an earlier order.
			if (!unanswered && !isConflict(error)) await orders.notSent(hint);
			if (!isConflict(error)) throw error as NodeApiError;
			// The key's earlier order differs from this body only in what this execution has (its On
			// Webhook resume URL, an S3 link signed now): it is this order, answered as the replay.
			const earlier = await orders.earlier(thisOrder, true);
			if (earlier) return replayOf(earlier, order);
			throw explainConflict(error, order);
		}
	});
}

/**
 * POST /jobs with the key. A workspace that takes fewer metadata keys than the order's with its tag
 * refuses it (400, nothing kept): the order goes again untagged, and once that is taken, orders
 * with as many keys go untagged at once (metadataLimits.ts).
 */
async function post(
	ctx: IExecuteFunctions,
	i: number,
	body: CreateJobBody,
	key: string,
	onUnanswered?: () => void,
): Promise<Placed> {
	try {
		const response = await apiRequest<Job>(ctx, 'POST', '/jobs', {
			body: body as IDataObject,
			idempotencyKey: key,
			itemIndex: i,
			onUnanswered,
		});
		return { job: response.body, replayed: response.headers['idempotent-replayed'] === 'true' };
	} catch (error) {
		const tagged = body.metadata?.[ORDER_TAG] !== undefined;
		const param = String((error as NodeApiError).context?.param ?? '');
		if (!tagged || (error as NodeApiError).httpCode !== '400' || !param.startsWith('metadata'))
			throw error as NodeApiError;
		const metadata = { ...body.metadata };
		delete metadata[ORDER_TAG];
		const placed = await post(ctx, i, { ...body, metadata }, key, onUnanswered);
		tagRefused((await serviceOf(ctx, i)).identity, Object.keys(body.metadata!).length);
		return placed;
	}
}

async function placeWithoutKey(
	ctx: IExecuteFunctions,
	i: number,
	order: Order,
	orders: RunOrders,
): Promise<Placed> {
	const body = { ...order.body };
	withWebhookToken(body, (await serviceOf(ctx, i)).webhookToken);
	const { uploads } = kept(ctx);
	const mark = `${i}:${digest(canonicalJson(sameOrderBody(order)))}`;
	if (order.file) {
		// Kept for this execution and item only, so that a Retry On Fail sends the same order.
		uploads[mark] ??= await orders.readingFile(
			i,
			order.file,
			async (file) => (await uploadFile(ctx, file, i)).id,
		);
		body.upload_id = uploads[mark];
	}
	if (order.s3) body.media_url = signedLink(order);
	const ordered = (ctx.getContext('node') as IDataObject).captioningOrders as
		| Record<string, string>
		| undefined;
	const orderedAs = ordered?.[mark];
	if (orderedAs) return { job: await readJob(ctx, orderedAs, { itemIndex: i }), replayed: true };
	let response;
	try {
		response = await apiRequest<Job>(ctx, 'POST', '/jobs', {
			body: body as IDataObject,
			itemIndex: i,
		});
	} catch (error) {
		throw maybeOrdered(error, body);
	}
	((ctx.getContext('node') as IDataObject).captioningOrders ??= {}) as Record<string, string>;
	((ctx.getContext('node') as IDataObject).captioningOrders as Record<string, string>)[mark] =
		response.body.id;
	return { job: response.body, replayed: false };
}
