// The Idempotency-Key of an order: what "the same order" is (README, "Paying once").
// The same order is the same CreateJob body, sent by the same node of the same workflow, where a
// file counts by its bytes (SHA-256) and not by the upload that carried it. Never the item's
// position (a listing that gains a file in front would pay again) nor the execution's id (every
// Retry would pay again).
// - Node version 1.2, Automatic: that is the whole key, so every repeat replays the first order.
// - Versions 1 and 1.1, Automatic: plus the run's generation, so a new run orders again (as these
//   versions always did) while a retry replays: Retry On Fail and the execution's Retry find the
//   key in the node context n8n copies; a crashed execution's Retry, whose context is empty, takes
//   the generation the last run recorded in n8n's deduplication store.
import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';
import { createHash } from 'node:crypto';

import type { Remembered } from './remembered';
import type { CreateJobBody } from './types';

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

/** This workflow, this node, this order (and, for versions 1 and 1.1, its place among equal orders of the run). */
export function orderFingerprint(ctx: IExecuteFunctions, identity: string, occurrence?: number): string {
	const node = ctx.getNode();
	return sha256([ctx.getWorkflow().id ?? '', node.id ?? node.name, identity, occurrence ?? ''].join('\n'));
}

/** Version 1.2's Automatic key: the same for every repeat of the order. */
export function automaticKey(fingerprint: string): string {
	return `n8n-${fingerprint.slice(0, 48)}`;
}

/**
 * Versions 1 and 1.1: the key of this run's generation of the order. A run that is not a retry
 * starts a new generation (orders again); a retry takes the last one (replays). The key is kept in
 * the node context, so the retries within an execution and the execution's Retry reuse it.
 */
export async function generationKey(ctx: IExecuteFunctions, fingerprint: string, remembered: Remembered | undefined): Promise<string> {
	const context = ctx.getContext('node') as IDataObject;
	const keys = (context.captioningKeys ??= {}) as Record<string, string>;
	if (keys[fingerprint]) return keys[fingerprint];
	let generation: string = ctx.getExecutionId() ?? '';
	if (remembered) generation = String(await lastOrNextGeneration(remembered, fingerprint, ctx.getMode() === 'retry'));
	keys[fingerprint] = `n8n-${sha256(`${fingerprint}\n${generation}`).slice(0, 48)}`;
	return keys[fingerprint];
}

/** Generations are recorded as "generation <fingerprint> <n>", n = 0, 1, 2… */
async function lastOrNextGeneration(remembered: Remembered, fingerprint: string, retry: boolean): Promise<number> {
	const WINDOW = 16;
	for (let start = 0; ; start += WINDOW) {
		const sentences = Array.from({ length: WINDOW }, (_, n) => `generation ${fingerprint} ${start + n}`);
		const before = await remembered.known(sentences);
		if (before.size < WINDOW) {
			const used = start + before.size;
			const generation = retry && used > 0 ? used - 1 : used;
			await remembered.record([`generation ${fingerprint} ${generation}`]);
			return generation;
		}
	}
}

export function checkCustomKey(ctx: IExecuteFunctions, itemIndex: number, key: string): string {
	if (!KEY_RULE.test(key)) {
		const problem = key.length === 0 ? 'is empty' : key.length > 255 ? `is ${key.length} characters long` : 'contains spaces or characters outside printable ASCII';
		throw new NodeOperationError(ctx.getNode(), `Idempotency Key ${problem}`, {
			itemIndex,
			description: 'The service accepts 1-255 printable ASCII characters without spaces (e.g. a Drive file id). Fix the key, or set Idempotency to Automatic.',
		});
	}
	return key;
}
