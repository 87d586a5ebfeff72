// Placing an order once (docs/paying-once.md). A keyed order has one name, its tag (orders/keys.ts),
// carried in its metadata. A first order looks nothing up (n8n's deduplication store says this node
// never sent it) and its POST carries the Idempotency-Key. What became of it is recorded by tag
// (runOrders.ts): its job's id, or when it was sent with an outcome still unknown. A repeat (Retry
// On Fail, the execution's Retry, a re-run, a schedule) reads the job its record names, else looks
// for its tag among the newest jobs; an unknown outcome a few minutes old is sent again with its
// key, which the service replays if it was placed. Where none of that settles it, the order may
// have been placed all the same: that item stops with an error and never pays again, the others go
// on. A file is read (probed, hashed, uploaded) within the run's Concurrency; the node context
// keeps, by tag, what a Retry needs (the upload of a file order).
import type { IDataObject, IExecuteFunctions, NodeApiError } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { fileProbe, fileSha256, hashingReads } from '../media/binary';
import { workspaceToken } from '../model/events';
import type { CreateJobBody, Job } from '../model/types';
import { apiRequest, KEY_RELIED_ON_MS } from '../transport';
import { uploadFile } from '../transport/files';
import { readJob } from '../transport/jobs';
import { presignGet } from '../s3/signing';
import { withoutToken } from '../transport/secrets';
import { explainConflict, isConflict, mayBePlaced, notFound } from './refusals';
import type { Placed, RunOrders } from './runOrders';
import type { Order, OrderNames } from './keys';
import { namesOf, ORDER_TAG } from './keys';

/** What the node context keeps for a Retry, by order: its upload; a file's hash by its binary-store id. */
function retryContext(ctx: IExecuteFunctions) {
	const context = ctx.getContext('node') as IDataObject;
	return {
		uploads: (context.captioningUploads ??= {}) as Record<string, string>,
		digests: (context.captioningDigests ??= {}) as Record<string, string>,
	};
}

/** A file order's file: its SHA-256 and upload where it was read, and how to upload it later. */
type ReadFile = { sha?: string; uploadId?: string; upload: () => Promise<string> };

/**
 * A file order's file, read within the run's Concurrency for files. Without a key it is uploaded
 * when the order is sent. With one, the size and first MiB, recorded in n8n's deduplication store
 * (a mark), tell a file never sent (uploaded at once, hashed on its way: one read) from one that
 * may have been (hashed first, uploaded only if its order was never sent). A file with a
 * binary-store id is hashed once an execution.
 */
async function readFile(
	ctx: IExecuteFunctions,
	i: number,
	order: Order,
	orders: RunOrders,
): Promise<ReadFile> {
	const file = order.file!;
	const upload = async () =>
		await orders.readingFile(i, file, async (reading) => (await uploadFile(ctx, reading, i)).id);
	if (order.idempotency === 'none') return { upload };
	const { digests } = retryContext(ctx);
	const known = file.binaryId ? digests[file.binaryId] : undefined;
	if (known) return { sha: known, upload };
	const remember = (sha: string) => (file.binaryId ? (digests[file.binaryId] = sha) : sha);
	return await orders.readingFile(i, file, async (reading) => {
		if (await orders.markSent(`probe ${await fileProbe(reading)}`))
			return { sha: remember(await fileSha256(reading)), upload };
		const hashing = hashingReads(reading);
		const uploadId = (await uploadFile(ctx, hashing.file, i)).id;
		return { sha: remember(hashing.sha256()), uploadId, upload };
	});
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

/**
 * A Captioning Trigger's URL on this n8n carries its workspace token (model/events.ts); a URL
 * anywhere else never does. This n8n's webhook address (origin and path prefix) is what stands
 * before `webhook-waiting/<execution id>` in `$execution.resumeUrl`, as before
 * `webhook/<id>/captioning` in a trigger's URL: both are n8n's WEBHOOK_URL.
 */
async function withWebhookToken(
	ctx: IExecuteFunctions,
	i: number,
	body: CreateJobBody,
	orders: RunOrders,
): Promise<void> {
	if (!body.webhook_url?.includes('/captioning')) return;
	const url = new URL(body.webhook_url);
	const resume = String(ctx.evaluateExpression('{{ $execution.resumeUrl }}', i));
	if (!URL.canParse(resume)) return;
	const own = new URL(resume);
	const base = `${own.origin}${own.pathname.split('/').slice(0, -2).join('/')}/`;
	const address = `${url.origin}${url.pathname}`;
	const ours =
		address.startsWith(base) &&
		/^[^/]+\/[^/]+\/captioning$/.test(address.slice(base.length)) &&
		url.username === '' &&
		url.password === '';
	if (!ours || url.searchParams.has('token')) return;
	url.searchParams.set('token', workspaceToken(await orders.workspaceId(i), address));
	body.webhook_url = url.toString();
}

/**
 * The body to POST: tagged (with a key), its upload (this execution's, saved under `savedAs` for a
 * Retry, or a new one), its S3 link, a Captioning Trigger's token.
 */
async function bodyOf(
	ctx: IExecuteFunctions,
	i: number,
	order: Order,
	orders: RunOrders,
	savedAs: string,
	file?: ReadFile,
	tag?: string,
): Promise<CreateJobBody> {
	const body: CreateJobBody = { ...order.body };
	await withWebhookToken(ctx, i, body, orders);
	if (tag) body.metadata = { ...(body.metadata ?? {}), [ORDER_TAG]: tag };
	if (file)
		body.upload_id = retryContext(ctx).uploads[savedAs] ??= file.uploadId ?? (await file.upload());
	if (order.s3) {
		// Signed now, valid an hour more than asked: the service may start fetching it some time later.
		const { head, hours } = order.s3;
		body.media_url = presignGet(head!.access, head!.object, (hours + 1) * 3600, new Date());
	}
	return body;
}

/**
 * Sends the order once. With a key: a repeat gets its earlier order back unsent, or stops where
 * that is not found; a first order is POSTed, guarded by the key; equal orders of a run are one
 * POST. Without one, a Retry On Fail (or the execution's Retry) reads back the job this execution
 * already ordered.
 */
export async function placeOrder(
	ctx: IExecuteFunctions,
	i: number,
	order: Order,
	orders: RunOrders,
): Promise<Placed> {
	const file = order.file ? await readFile(ctx, i, order, orders) : undefined;
	const names = namesOf(ctx, order, file?.sha);
	if (order.idempotency === 'none')
		return await placeWithoutKey(ctx, i, order, orders, names.tag, file);
	const first = orders.underWay.get(names.tag);
	if (first) return { ...(await first), replayed: true };
	const placing = placeKeyed(ctx, i, order, orders, names, file);
	orders.underWay.set(names.tag, placing);
	return await placing;
}

async function placeKeyed(
	ctx: IExecuteFunctions,
	i: number,
	order: Order,
	orders: RunOrders,
	{ key, tag, named, media, custom }: OrderNames,
	file?: ReadFile,
): Promise<Placed> {
	const mark = `order ${tag}`;
	const record = orders.recordOf(tag);
	if (await orders.markSent(mark, record !== undefined)) {
		const earlier = await orders.earlier(i, tag);
		if (earlier) return replayOf(earlier, order);
		// Sent moments ago with an unknown outcome: sent again with its key, which replays it if placed.
		if (!(typeof record === 'number' && Date.now() - record < KEY_RELIED_ON_MS))
			throw notFound(ctx, i, named, tag);
	}
	let body: CreateJobBody;
	try {
		body = await bodyOf(ctx, i, order, orders, tag, file, tag);
	} catch (error) {
		orders.unmark(mark);
		throw error as NodeApiError;
	}
	let unknown = false;
	const unknownOutcome = () => {
		unknown = true;
		if (typeof orders.recordOf(tag) !== 'number') orders.record(tag, Date.now());
	};
	try {
		const placed = await post(ctx, i, body, key, unknownOutcome);
		orders.record(tag, placed.job.id);
		return placed;
	} catch (error) {
		// Every attempt refused in so many words (a 4xx, 429 or 503) or never sent (the batch stopped
		// first, n8n refused it, the host unreachable): nothing was ordered, and a repeat orders it.
		// Any other outcome may be a placed order: its mark and record stay. A 409 names an earlier order.
		if (!unknown && !isConflict(error)) {
			orders.unmark(mark);
			orders.record(tag, undefined);
		}
		if (unknown && !isConflict(error)) throw mayBePlaced(error);
		if (!isConflict(error)) throw error as NodeApiError;
		// The key's earlier order differs from this body only in what this execution has (its On
		// Webhook resume URL, an S3 link signed now): it is this order, answered as the replay.
		const earlier = await orders.earlier(i, tag, true);
		if (earlier) return replayOf(earlier, order);
		throw explainConflict(error, media, custom ? key : undefined);
	}
}

/** POST /jobs, with the key if it has one. */
async function post(
	ctx: IExecuteFunctions,
	i: number,
	body: CreateJobBody,
	key: string | undefined,
	onUnknownOutcome: () => void,
): Promise<Placed> {
	const response = await apiRequest<Job>(ctx, 'POST', '/jobs', {
		body: body as IDataObject,
		idempotencyKey: key,
		itemIndex: i,
		onUnknownOutcome,
	}).catch((error: NodeApiError) => {
		const param = String(error.context?.param ?? '');
		if (key && error.httpCode === '400' && param.startsWith('metadata'))
			error.description = `This node adds a metadata key of its own (${ORDER_TAG}), by which a repeat finds the order, so an order takes one key fewer than the workspace allows: if that is the limit it met, remove one metadata pair. ${error.description}`;
		throw error;
	});
	return { job: response.body, replayed: response.headers['idempotent-replayed'] === 'true' };
}

/**
 * An order without a key. The node context keeps its job by item and tag for this execution, so
 * that a Retry On Fail (or the execution's Retry) reads it back rather than order again; an order
 * whose outcome is unknown is kept as such (''), and is not sent again.
 */
async function placeWithoutKey(
	ctx: IExecuteFunctions,
	i: number,
	order: Order,
	orders: RunOrders,
	tag: string,
	file?: ReadFile,
): Promise<Placed> {
	const context = ctx.getContext('node') as IDataObject;
	const ordered = (context.captioningOrders ??= {}) as Record<string, string>;
	const mark = `${i}:${tag}`;
	if (ordered[mark] === '')
		throw new NodeOperationError(ctx.getNode(), 'This order got no answer when it was sent', {
			itemIndex: i,
			description:
				'A job may exist and be charged, so with Idempotency None it is not sent again: look for it with Job → Get Many before ordering again, or set Idempotency to Automatic, which makes a repeat safe.',
		});
	if (ordered[mark])
		return { job: await readJob(ctx, ordered[mark], { itemIndex: i }), replayed: true };
	const body = await bodyOf(ctx, i, order, orders, mark, file);
	try {
		const placed = await post(ctx, i, body, undefined, () => (ordered[mark] = ''));
		ordered[mark] = placed.job.id;
		return placed;
	} catch (error) {
		throw ordered[mark] === '' ? mayBePlaced(error, body) : error;
	}
}
