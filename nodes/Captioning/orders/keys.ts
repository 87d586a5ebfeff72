// What "the same order" is, in one place (docs/paying-once.md): its key, its tag, and which jobs
// are it. The same order is the same CreateJob body, sent by the same node of the same workflow,
// where a file counts by its bytes (SHA-256) and not by the upload that carried it. Never the
// item's position (a listing that gains a file in front would pay again) nor the execution's id
// (every Retry would pay again).
import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';
import { createHash } from 'node:crypto';

import type { CreateJobBody } from '../model/types';
import { s3Uri } from '../s3/addresses';
import type { InputFile } from '../media/binary';
import type { HeadedObject } from '../s3/object';
import type { S3Access, S3Object } from '../s3/addresses';

/** An item's order, checked and ready: nothing has been sent yet. */
export interface Order {
	body: CreateJobBody;
	file?: InputFile;
	/** An S3 Object source: the object asked for, the link's life, and (after `check`) what its HEAD found. */
	s3?: { object: S3Object; hours: number; head?: HeadedObject & { access: S3Access } };
	idempotency: 'auto' | 'custom' | 'none';
	customKey?: string;
	wait: 'none' | 'poll' | 'webhook';
	interval: number;
	timeout: number;
}

const KEY_RULE = /^[!-~]{1,255}$/;

/** JSON with sorted keys: the same order twice gives the same text. */
function canonicalJson(value: unknown): string {
	if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
	if (value && typeof value === 'object') {
		return `{${Object.keys(value)
			.sort()
			.map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
			.join(',')}}`;
	}
	return JSON.stringify(value);
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * The metadata key every keyed order carries its tag under. The service's job list is the record
 * of what was ordered: a repeat finds the earlier order of its tag there.
 */
export const ORDER_TAG = 'n8n_order';

/** What names an order: its key, its tag, which jobs are it, and how errors name it. */
export interface OrderNames {
	key: string;
	/** The key is the user's Custom Key. */
	custom: boolean;
	/**
	 * Its one name, from the key and what it orders (the body, an On Webhook order's without its
	 * Webhook URL; a file by its SHA-256, an S3 Object by its address and version): the `n8n_order`
	 * metadata a repeat finds it by, and what the node context and n8n's deduplication store keep
	 * of it (never the order itself).
	 */
	tag: string;
	/** The order as errors name it: its title and media, as the user gave them. */
	named: string;
	/** Its media as the user named it. */
	media: string;
}

/** An order's names. Automatic's key is this workflow, this node and the order: the same for every repeat. */
export function namesOf(ctx: IExecuteFunctions, order: Order, fileSha256?: string): OrderNames {
	const rest: IDataObject = { ...order.body };
	// An On Webhook order's Webhook URL is the execution's own resume URL.
	if (order.wait === 'webhook') delete rest.webhook_url;
	if (fileSha256 !== undefined) {
		delete rest.upload_id;
		rest.file = { sha256: fileSha256 };
	}
	if (order.s3) Object.assign(rest, { s3: order.s3.head!.url, version: order.s3.head!.version });
	const orderJson = canonicalJson(rest);
	const node = ctx.getNode();
	const key =
		order.idempotency === 'custom'
			? order.customKey!
			: `n8n-${sha256([ctx.getWorkflow().id ?? '', node.id ?? node.name, orderJson].join('\n')).slice(0, 48)}`;
	const tag = sha256(`${key}\n${orderJson}`).slice(0, 40);
	const media = order.s3
		? s3Uri(order.s3.object)
		: order.file
			? `the file ${order.file.fileName}`
			: order.body.upload_id !== undefined
				? `upload ${order.body.upload_id}`
				: `${order.body.media_url}`;
	return {
		key,
		custom: order.idempotency === 'custom',
		tag,
		named: `${order.body.title ? `"${order.body.title}" ` : ''}of ${media}`,
		media,
	};
}

export function checkCustomKey(ctx: IExecuteFunctions, itemIndex: number, key: string): string {
	if (!KEY_RULE.test(key)) {
		const problem =
			key.length === 0
				? 'is empty'
				: key.length > 255
					? `is ${key.length} characters long`
					: 'contains spaces or characters outside printable ASCII';
		throw new NodeOperationError(ctx.getNode(), `Idempotency Key ${problem}`, {
			itemIndex,
			description:
				'The service accepts 1-255 printable ASCII characters without spaces (e.g. a Drive file id). Fix the key, or set Idempotency to Automatic.',
		});
	}
	return key;
}
