// The Idempotency-Key of an order: what "the same order" is (docs/paying-once.md).
// The same order is the same CreateJob body, sent by the same node of the same workflow, where a
// file counts by its bytes (SHA-256) and not by the upload that carried it. Never the item's
// position (a listing that gains a file in front would pay again) nor the execution's id (every
// Retry would pay again). With Idempotency: Automatic that is the whole key, so every repeat (a
// retry, the execution's Retry, a re-run) replays the first order.
import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';
import { createHash } from 'node:crypto';

import type { CreateJobBody } from '../model/types';

const KEY_RULE = /^[!-~]{1,255}$/;

/** JSON with sorted keys: the same order twice gives the same text. */
export function canonicalJson(value: unknown): string {
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

/** The order as the service sees it, a file counting by its bytes rather than its upload id. */
export function orderIdentity(body: CreateJobBody, fileSha256?: string): string {
	if (fileSha256 === undefined) return canonicalJson(body);
	const rest: IDataObject = { ...body };
	delete rest.upload_id;
	return canonicalJson({ ...rest, file: { sha256: fileSha256 } });
}

/** Automatic's key: this workflow, this node, this order; the same for every repeat of it. */
export function automaticKey(ctx: IExecuteFunctions, identity: string): string {
	const node = ctx.getNode();
	return `n8n-${sha256([ctx.getWorkflow().id ?? '', node.id ?? node.name, identity].join('\n')).slice(0, 48)}`;
}

/**
 * The metadata key every keyed order carries its tag under. The service's job list is the record
 * of what was ordered: a repeat finds the earlier order of its tag there.
 */
export const ORDER_TAG = 'n8n_order';

/**
 * The order's tag: its one name, from its key and what it orders. It is the `n8n_order` metadata
 * a repeat finds the order by, and what the node context and n8n's deduplication store keep of it
 * (never the order itself).
 */
export function orderTag(key: string, identity: string): string {
	return sha256(`${key}\n${identity}`).slice(0, 40);
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
