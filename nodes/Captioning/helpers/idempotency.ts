// Idempotency-Key for POST /jobs: derived by default from the execution, node, item and body, so
// n8n's Retry On Fail and the transport's retries replay the order instead of paying twice.
import type { IExecuteFunctions } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';
import { createHash } from 'node:crypto';

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

export function automaticKey(ctx: IExecuteFunctions, itemIndex: number, body: CreateJobBody): string {
	const node = ctx.getNode();
	const digest = createHash('sha256')
		.update([ctx.getExecutionId(), node.id ?? node.name, String(itemIndex), canonicalJson(body)].join('\n'))
		.digest('hex');
	return `n8n-${digest.slice(0, 48)}`;
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
