// The one way the nodes talk to the service: apiRequest over httpRequestWithAuthentication,
// retries with backoff and jitter, paging, and errors mapped once.
import type {
	IDataObject,
	IHttpRequestMethods,
	IHttpRequestOptions,
	IN8nHttpFullResponse,
} from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { networkError, notSentError, refusedByN8n, responseError } from './errors';
import type { KeyPace, Lane, Urgency } from './pacing';
import { HeldTooLong, ticketNumber, TurnTimedOut } from './pacing';
import { BatchStopped, runSlotsOf } from './runSlots';
import type { ApiContext } from './service';
import { CREDENTIAL_NAME, serviceOf } from './service';
import { hideSecrets } from './secrets';
import { pause } from './sleep';

export { pause };

export type { ApiContext };
export { CREDENTIAL_NAME };

export interface RetryPolicy {
	/** Attempts in all, the first included. */
	maxAttempts: number;
	/** First backoff; doubles per attempt, capped at maxDelayMs, with jitter. */
	baseDelayMs: number;
	maxDelayMs: number;
	/** The longest wait a Retry-After may impose, on this request and on the key's shared hold; longer ones end the retries. */
	maxRetryAfterMs: number;
	/** The longest a request waits for its turn in the key's pace before it fails unsent. */
	maxTurnWaitMs: number;
	/** 503 temporarily_unavailable without Retry-After: the interface says retry after 5 s. */
	unavailableDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = {
	maxAttempts: 6,
	baseDelayMs: 500,
	maxDelayMs: 8000,
	maxRetryAfterMs: 60000,
	maxTurnWaitMs: 5 * 60000,
	unavailableDelayMs: 5000,
};

export function cancelSignal(ctx: ApiContext): AbortSignal | undefined {
	return 'getExecutionCancelSignal' in ctx ? ctx.getExecutionCancelSignal() : undefined;
}

function isRetryableStatus(status: number): boolean {
	return status === 429 || status >= 500;
}

function retryAfterMs(response: IN8nHttpFullResponse): number | undefined {
	const raw = response.headers['retry-after'];
	if (raw === undefined) return undefined;
	const seconds = Number(Array.isArray(raw) ? raw[0] : raw);
	if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
	const date = Date.parse(String(raw));
	return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** Exponential backoff with "equal jitter": half fixed, half random, so parallel items spread out. */
function backoffMs(policy: RetryPolicy, attempt: number): number {
	const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
	return ceiling / 2 + Math.random() * (ceiling / 2);
}

export interface SendOptions {
	/** May a failed attempt be sent again? False for a POST /jobs without Idempotency-Key. */
	retryable: boolean;
	/** Which of the service's limits the request counts against. */
	lane: Lane;
	/** The pace of the key it carries (reads and writes); none for a storage host. */
	pace?: KeyPace;
	/** Which waiting request goes first in the key's pace (default: work). */
	urgency?: Urgency;
	/** Its place among the node run's places: lower goes first (default: the item index). */
	priority?: number;
	/** Names the target in network errors: never a URL with a signature in it. */
	target: string;
	itemIndex?: number;
	retry?: Partial<RetryPolicy>;
}

/** The execution's cancel signal and the run's stop, as one signal (either ends a wait for a turn). */
function anySignal(signals: Array<AbortSignal | undefined>): AbortSignal | undefined {
	const present = signals.filter((s): s is AbortSignal => s !== undefined);
	return present.length > 1 ? AbortSignal.any(present) : present[0];
}

/**
 * Sends with retries: 429, 5xx and network errors are retried with backoff and jitter,
 * honouring Retry-After; any other non-2xx ends at once. `send` must make a fresh request
 * each time (a stream body is reopened by the caller). Each attempt takes a place of the node run
 * (Batching → Concurrency) and a turn of the key's pace (transport/pacing.ts); a 429 holds the
 * key's lane for every run, and the request keeps its place in the queue for the next attempt.
 */
export async function sendWithRetries(
	ctx: ApiContext,
	options: SendOptions,
	send: () => Promise<IN8nHttpFullResponse>,
): Promise<IN8nHttpFullResponse> {
	const policy = { ...DEFAULT_RETRY, ...options.retry };
	const cancel = cancelSignal(ctx);
	const slots = runSlotsOf(ctx);
	const signal = anySignal([cancel, slots?.stopSignal]);
	const lane = options.lane === 'storage' ? undefined : options.lane;
	const pace = lane ? options.pace : undefined;
	const seq = ticketNumber();
	const cancelled = () =>
		new NodeOperationError(
			ctx.getNode(),
			'The execution was cancelled while a request to the captioning service was under way',
			{ itemIndex: options.itemIndex },
		);
	for (let attempt = 1; ; attempt++) {
		let release = () => {};
		let done = () => {};
		let waited: unknown;
		try {
			if (slots) release = await slots.acquire(options.priority ?? options.itemIndex ?? 0, cancel);
			if (pace && lane)
				done = await pace.turn(lane, options.urgency ?? 'work', seq, policy.maxTurnWaitMs, signal);
		} catch (error) {
			release();
			waited = error;
		}
		// Not sent: the run stopped (another item failed), or the execution was cancelled.
		if (waited !== undefined) {
			if (slots?.stopped) throw new BatchStopped();
			if (cancel?.aborted) throw cancelled();
			throw notSentInTime(ctx, waited, options.itemIndex);
		}
		let response: IN8nHttpFullResponse;
		try {
			response = await send();
		} catch (error) {
			done();
			release();
			if (cancel?.aborted) throw cancelled();
			// Refused by n8n's own policy before it left: sending it again would meet the same.
			if (refusedByN8n(error))
				throw notSentError(ctx.getNode(), error, options.target, options.itemIndex);
			if (!options.retryable || attempt >= policy.maxAttempts) {
				throw networkError(ctx.getNode(), error, options.target, attempt, options.itemIndex);
			}
			await pause(backoffMs(policy, attempt), cancel);
			continue;
		}
		const status = response.statusCode;
		const retryAfter = retryAfterMs(response);
		if (pace && lane)
			pace.observe(
				lane,
				status,
				status === 503 ? (retryAfter ?? policy.unavailableDelayMs) : retryAfter,
				policy.maxRetryAfterMs,
			);
		done();
		release();
		if (status >= 200 && status < 300) return response;
		// Under a shared pace a 429 may be another run's doing: it is tried more often (the lane holds).
		const attempts = status === 429 && pace ? policy.maxAttempts * 2 : policy.maxAttempts;
		if (!options.retryable || !isRetryableStatus(status) || attempt >= attempts) {
			throw responseError(ctx.getNode(), response, attempt, options.itemIndex);
		}
		let delay = retryAfter;
		if (delay === undefined)
			delay = status === 503 ? policy.unavailableDelayMs : backoffMs(policy, attempt);
		if (delay > policy.maxRetryAfterMs)
			throw responseError(ctx.getNode(), response, attempt, options.itemIndex);
		// The key's lane holds every request for a 429's Retry-After; this one goes again in its place.
		if (status === 429 && pace) continue;
		// A little jitter on top of Retry-After, so a batch does not come back in one burst.
		await pause(delay + Math.random() * Math.min(250, policy.baseDelayMs), cancel);
	}
}

/** A request that waited for its turn in the key's pace and was not sent: what to do about it. */
function notSentInTime(ctx: ApiContext, waited: unknown, itemIndex?: number): NodeOperationError {
	const description =
		waited instanceof HeldTooLong
			? 'The service limits how fast one API key may read and one workspace may write, and asked for a longer pause than the node waits. Nothing was sent, so nothing was ordered or charged.'
			: waited instanceof TurnTimedOut
				? 'Every workflow that uses this API key shares its rate limit, and others kept it busy. Nothing was sent, so nothing was ordered or charged: run again, lower Batching → Concurrency, or use a key of its own for this workflow.'
				: undefined;
	return new NodeOperationError(ctx.getNode(), waited as Error, { itemIndex, description });
}

export interface ApiRequestOptions {
	body?: IDataObject;
	qs?: IDataObject;
	/** Sent as Idempotency-Key; a POST /jobs is retried only when it has one. */
	idempotencyKey?: string;
	itemIndex?: number;
	/** Its place among the node run's places (default: the item index). */
	priority?: number;
	/** Which waiting request goes first in the key's pace (default: work). */
	urgency?: Urgency;
	retry?: Partial<RetryPolicy>;
}

export interface ApiResponse<T> {
	body: T;
	headers: IDataObject;
	statusCode: number;
}

/** A request to {base_url}{path} with the API key; returns the 2xx response or throws NodeApiError. */
export async function apiRequest<T>(
	ctx: ApiContext,
	method: IHttpRequestMethods,
	path: string,
	options: ApiRequestOptions = {},
): Promise<ApiResponse<T>> {
	const { baseUrl, pace } = await serviceOf(ctx, options.itemIndex);
	const headers: IDataObject = {};
	if (options.idempotencyKey !== undefined) headers['Idempotency-Key'] = options.idempotencyKey;
	const request: IHttpRequestOptions = {
		method,
		url: `${baseUrl}${path}`,
		qs: options.qs,
		body: options.body,
		headers,
		json: true,
		returnFullResponse: true,
		ignoreHttpStatusErrors: true,
		// n8n forwards credentials across origins on redirect by default: never follow one with the key.
		disableFollowRedirect: true,
		timeout: 60000,
	};
	const retryable = !(
		method === 'POST' &&
		path === '/jobs' &&
		options.idempotencyKey === undefined
	);
	const response = await sendWithRetries(
		ctx,
		{
			retryable,
			lane: method === 'GET' ? 'read' : 'write',
			pace,
			urgency: options.urgency,
			target: `the captioning service at ${new URL(baseUrl).origin}`,
			itemIndex: options.itemIndex,
			priority: options.priority,
			retry: options.retry,
		},
		async () =>
			(await ctx.helpers.httpRequestWithAuthentication.call(ctx, CREDENTIAL_NAME, {
				...request,
				// A fresh headers object per attempt: authentication writes the key into it.
				headers: { ...headers },
			})) as IN8nHttpFullResponse,
	);
	// An S3 Object order's signed media_url and a Webhook URL's Secret Token come back in every job: never pass them on.
	hideSecrets(response.body);
	return {
		body: response.body as T,
		headers: response.headers as IDataObject,
		statusCode: response.statusCode,
	};
}

/** Encodes an id for use as one path segment. */
export function segment(id: string): string {
	return encodeURIComponent(id);
}
