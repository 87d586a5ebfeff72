// Turns a failed response into one NodeApiError that says what happened and what to do.
// Built only from the service's error body and response headers, never from the request,
// so the API key cannot reach an error message.
import type { IExecuteFunctions, IN8nHttpFullResponse, INode, JsonObject } from 'n8n-workflow';
import { NodeApiError, NodeOperationError } from 'n8n-workflow';

import type { ServiceError } from '../model/types';
import { rateLimitSettings } from './limits';
import { withoutSignatures, withoutToken } from './secrets';

/** What to do, by the service's error code, the HTTP status (or its class), or why it was not sent again. */
const ADVICE: Record<string, string> = {
	'400': 'The service refused the request. Fix the field it names and run again.',
	'401': 'Check the API key in the credentials; a revoked key must be replaced with a new one.',
	'402':
		'The workspace has insufficient funds or budget for this order. Top up the prepaid balance (or raise the budget) in the captioning dashboard, then run again. No job was created.',
	'403':
		'This API key or workspace does not allow the operation. Ordering captions and uploading files need a key with full access; a read-only key can only read jobs, captions and the account.',
	'404': 'Not found in this workspace. Check the id, and which workspace the credentials are for.',
	'409': 'The request conflicts with an earlier one.',
	'413': 'The JSON body is over 64 KiB. Shorten the glossary, metadata or redaction terms.',
	'415': 'The service accepts JSON bodies only.',
	'422': 'The service cannot process this media or order.',
	'429':
		'The rate limit was still exceeded after the node waited and retried. Lower the batch size, or add a Wait node between batches.',
	'503': 'The service stayed unavailable while the node retried. Run again in a little while.',
	once: 'It was not sent again: an order without an Idempotency-Key is never resent, so that it cannot be paid twice. Run again in a little while, or set Idempotency to Automatic.',
	asked: `The service asked this API key to wait longer than the node holds it (${rateLimitSettings.maxHoldMs / 1000} s), so it was not sent again. Run again after that time.`,
	'3xx':
		'The server answered with a redirect, which the node does not follow, so that files and the API key go only where the service said. Check the Base URL (or ask the service why the upload URL redirects).',
	'5xx': 'The service had an internal error at every try. Run again in a little while.',
	idempotency_conflict:
		'This Idempotency-Key was already used for a different order, so the service refused to create a second one. Use a new key, or set Idempotency to Automatic.',
};

/** A response header as one string ('' when absent). */
export function header(response: IN8nHttpFullResponse, name: string): string {
	const value = response.headers[name];
	return Array.isArray(value) ? String(value[0]) : value === undefined ? '' : String(value);
}

type ErrorBody =
	| { error?: { code?: unknown; message?: unknown; param?: unknown } }
	| string
	| undefined;

export function serviceError(response: IN8nHttpFullResponse): ServiceError {
	// The body as the service sent it: a download's error arrives as bytes, holding the same JSON.
	let body = response.body as ErrorBody;
	if (Buffer.isBuffer(response.body)) {
		body = response.body.toString('utf8');
		try {
			const parsed: unknown = JSON.parse(body);
			if (typeof parsed === 'object' && parsed !== null) body = parsed as ErrorBody;
		} catch {
			// not JSON: the text as it came
		}
	}
	const error = typeof body === 'object' ? body?.error : undefined;
	// Without the service's words: the text of the answer without its markup (a proxy's page), or its status.
	const text = typeof body === 'string' ? body.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ') : '';
	const message =
		(typeof error?.message === 'string' && error.message) ||
		text.trim().slice(0, 200) ||
		(response.statusCode >= 300 && response.statusCode < 400
			? `Redirect to ${header(response, 'location') || 'another location'} not followed`
			: `HTTP ${response.statusCode}`);
	return {
		httpCode: String(response.statusCode),
		code: typeof error?.code === 'string' ? error.code : '',
		// The service may quote an S3 Object order's signed media_url, or a Webhook URL: keep their secrets out.
		message: withoutToken(withoutSignatures(message)),
		param: typeof error?.param === 'string' ? error.param : '',
		requestId: header(response, 'request-id'),
	};
}

/**
 * The description of an answer that ends the request. `why` says why a 429 or 5xx was not tried
 * again: `once` (it may not be resent), `asked` (the service asked for a longer wait than the key
 * holds); without it, the attempts ran out.
 */
export function describe(e: ServiceError, attempts: number, why?: 'once' | 'asked'): string {
	// `why` comes only with a 429 or 5xx that was not sent again (retries.ts).
	const advice = why
		? `${e.httpCode === '429' ? 'The service answered 429 (rate limit).' : 'The service was busy.'} ${ADVICE[why]}`
		: (ADVICE[e.code] ??
			ADVICE[e.httpCode] ??
			ADVICE[`${e.httpCode[0]}xx`] ??
			'The service refused the request.');
	const parts = [advice];
	if (e.param) parts.push(`Field: ${e.param}.`);
	if (e.code) parts.push(`Code: ${e.code}.`);
	if (attempts > 1) parts.push(`Attempts: ${attempts}.`);
	if (e.requestId) parts.push(`Request id (for support): ${e.requestId}.`);
	return parts.join(' ');
}

export function apiError(
	node: INode,
	e: ServiceError,
	description: string,
	itemIndex?: number,
): NodeApiError {
	const error = new NodeApiError(node, e as unknown as JsonObject, {
		message: e.message,
		description,
		httpCode: e.httpCode,
		itemIndex,
	});
	// NodeApiError may replace the message with a generic one for the status: keep the service's words.
	const tag = [e.httpCode && `HTTP ${e.httpCode}`, e.code].filter(Boolean).join(' ');
	error.message = tag && e.httpCode ? `${e.message} [${tag}]` : e.message;
	Object.assign(error.context, { code: e.code, param: e.param, requestId: e.requestId });
	return error;
}

/** A failure that sent nothing and concerns its own item alone: the rest of the batch goes on. */
export class ItemOnlyError extends NodeOperationError {}

/** Refuses an item's input before any request: the field and the rule in the message, the fix in the description. */
export function refuse(
	ctx: Pick<IExecuteFunctions, 'getNode'>,
	itemIndex: number | undefined,
	message: string,
	description: string,
): never {
	throw new NodeOperationError(ctx.getNode(), message, { itemIndex, description });
}
