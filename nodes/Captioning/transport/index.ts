// The one way the nodes talk to the service: apiRequest over httpRequestWithAuthentication,
// retries with backoff and jitter, paging, and errors mapped once.
import type {
	IDataObject,
	IExecuteFunctions,
	IHookFunctions,
	IHttpRequestMethods,
	IHttpRequestOptions,
	ILoadOptionsFunctions,
	IN8nHttpFullResponse,
	IPollFunctions,
	IWebhookFunctions,
} from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import type { Job, JobList } from '../helpers/types';
import { networkError, responseError } from './errors';
import type { Lane } from './pacing';
import { pacerOf } from './pacing';
import { hideSignatures } from './signed';
import { pause } from './sleep';

export { pause };

export type ApiContext = IExecuteFunctions | IHookFunctions | IWebhookFunctions | ILoadOptionsFunctions | IPollFunctions;

export const CREDENTIAL_NAME = 'captioningApi';

export interface RetryPolicy {
	/** Attempts in all, the first included. */
	maxAttempts: number;
	/** First backoff; doubles per attempt, capped at maxDelayMs, with jitter. */
	baseDelayMs: number;
	maxDelayMs: number;
	/** The longest wait a single Retry-After may impose; longer ones end the retries. */
	maxRetryAfterMs: number;
	/** 503 temporarily_unavailable without Retry-After: the interface says retry after 5 s. */
	unavailableDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = {
	maxAttempts: 6,
	baseDelayMs: 500,
	maxDelayMs: 8000,
	maxRetryAfterMs: 60000,
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
	/** Which of the service's limits the request counts against (for the node run's shared pacing). */
	lane: Lane;
	/** Its place in the node run's pacing: lower goes first (default: the item index). */
	priority?: number;
	/** Names the target in network errors: never a URL with a signature in it. */
	target: string;
	itemIndex?: number;
	retry?: Partial<RetryPolicy>;
}

/**
 * Sends with retries: 429, 5xx and network errors are retried with backoff and jitter,
 * honouring Retry-After; any other non-2xx ends at once. `send` must make a fresh request
 * each time (a stream body is reopened by the caller).
 */
export async function sendWithRetries(
	ctx: ApiContext,
	options: SendOptions,
	send: () => Promise<IN8nHttpFullResponse>,
): Promise<IN8nHttpFullResponse> {
	const policy = { ...DEFAULT_RETRY, ...options.retry };
	const signal = cancelSignal(ctx);
	// In a batch, every request of the node run takes its turn from one pacing (transport/pacing.ts).
	const pacer = pacerOf(ctx);
	for (let attempt = 1; ; attempt++) {
		const release = pacer ? await pacer.acquire(options.priority ?? options.itemIndex ?? 0, options.lane, signal) : () => {};
		let response: IN8nHttpFullResponse;
		try {
			response = await send();
		} catch (error) {
			release();
			if (signal?.aborted) {
				throw new NodeOperationError(ctx.getNode(), 'The execution was cancelled while a request to the captioning service was under way', { itemIndex: options.itemIndex });
			}
			if (!options.retryable || attempt >= policy.maxAttempts) {
				throw networkError(ctx.getNode(), error, options.target, attempt, options.itemIndex);
			}
			await pause(backoffMs(policy, attempt), signal);
			continue;
		}
		const status = response.statusCode;
		const retryAfter = retryAfterMs(response);
		pacer?.observe(options.lane, status, status === 503 ? (retryAfter ?? policy.unavailableDelayMs) : retryAfter);
		release();
		if (status >= 200 && status < 300) return response;
		if (!options.retryable || !isRetryableStatus(status) || attempt >= policy.maxAttempts) {
			throw responseError(ctx.getNode(), response, attempt, options.itemIndex);
		}
		let delay = retryAfter;
		if (delay === undefined) delay = status === 503 ? policy.unavailableDelayMs : backoffMs(policy, attempt);
		if (delay > policy.maxRetryAfterMs) throw responseError(ctx.getNode(), response, attempt, options.itemIndex);
		// A little jitter on top of Retry-After, so a batch does not come back in one burst.
		await pause(delay + Math.random() * Math.min(250, policy.baseDelayMs), signal);
	}
}

/** The credentials' base URL, checked and without a trailing slash. */
export async function getBaseUrl(ctx: ApiContext, itemIndex = 0): Promise<string> {
	const credentials = await ctx.getCredentials<{ baseUrl?: string }>(CREDENTIAL_NAME, itemIndex);
	const baseUrl = String(credentials.baseUrl ?? '').trim().replace(/\/+$/, '');
	let url: URL | undefined;
	try {
		url = new URL(baseUrl);
	} catch {
		url = undefined;
	}
	if (!url || !['http:', 'https:'].includes(url.protocol) || !url.pathname.endsWith('/v1')) {
		throw new NodeOperationError(ctx.getNode(), `The Base URL "${baseUrl}" in the Captioning API credentials is not valid`, {
			itemIndex,
			description: 'It must be an http(s) URL ending in the version segment /v1, for example https://api.example.com/v1.',
		});
	}
	return baseUrl;
}

/**
 * Whether a URL lies under the Base URL: the same origin and, after the URL parser has resolved
 * dot segments (also percent-encoded ones), a path inside the Base URL's path. Only such URLs get
 * the API key: elsewhere on the same host (another API, the host's admin pages) it is not sent.
 */
export function underBaseUrl(url: string, baseUrl: string): boolean {
	try {
		const target = new URL(url);
		const base = new URL(baseUrl);
		const prefix = base.pathname.replace(/\/+$/, '');
		return target.origin === base.origin && target.username === '' && target.password === '' && target.pathname.startsWith(`${prefix}/`);
	} catch {
		return false;
	}
}

export interface ApiRequestOptions {
	body?: IDataObject;
	qs?: IDataObject;
	/** Sent as Idempotency-Key; a POST /jobs is retried only when it has one. */
	idempotencyKey?: string;
	itemIndex?: number;
	/** Its place in the node run's pacing (default: the item index). */
	priority?: number;
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
	const baseUrl = await getBaseUrl(ctx, options.itemIndex);
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
	const retryable = !(method === 'POST' && path === '/jobs' && options.idempotencyKey === undefined);
	const response = await sendWithRetries(
		ctx,
		{ retryable, lane: method === 'GET' ? 'read' : 'write', target: `the captioning service at ${new URL(baseUrl).origin}`, itemIndex: options.itemIndex, priority: options.priority, retry: options.retry },
		async () =>
			(await ctx.helpers.httpRequestWithAuthentication.call(ctx, CREDENTIAL_NAME, {
				...request,
				// A fresh headers object per attempt: authentication writes the key into it.
				headers: { ...headers },
			})) as IN8nHttpFullResponse,
	);
	// An S3 Object order's media_url comes back in every job: never pass its signature on.
	hideSignatures(response.body);
	return { body: response.body as T, headers: response.headers as IDataObject, statusCode: response.statusCode };
}

/**
 * The job list (GET /jobs, newest first), page after page, following `starting_after` while
 * `has_more`. `pageSize` may shrink a page (e.g. to what a limit still wants). A caller stops
 * reading by leaving the loop.
 */
export async function* jobPages(
	ctx: ApiContext,
	filters: IDataObject = {},
	options: { itemIndex?: number; priority?: number; pageSize?: (read: number) => number } = {},
): AsyncGenerator<Job[]> {
	let startingAfter: string | undefined;
	let read = 0;
	for (;;) {
		const qs: IDataObject = { ...filters, limit: options.pageSize?.(read) ?? 100 };
		if (startingAfter) qs.starting_after = startingAfter;
		const { body } = await apiRequest<JobList>(ctx, 'GET', '/jobs', { qs, itemIndex: options.itemIndex, priority: options.priority });
		read += body.data.length;
		yield body.data;
		if (!body.has_more || body.data.length === 0) return;
		startingAfter = body.data[body.data.length - 1].id;
	}
}

/** GET /jobs, following `starting_after` while `has_more`, up to `limit` jobs (all when undefined). */
export async function listJobs(
	ctx: ApiContext,
	filters: IDataObject,
	limit: number | undefined,
	itemIndex?: number,
): Promise<Job[]> {
	const jobs: Job[] = [];
	const pageSize = (read: number) => (limit === undefined ? 100 : Math.min(100, limit - read));
	for await (const page of jobPages(ctx, filters, { itemIndex, pageSize })) {
		jobs.push(...page);
		if (limit !== undefined && jobs.length >= limit) break;
	}
	return limit === undefined ? jobs : jobs.slice(0, limit);
}

/** Encodes an id for use as one path segment. */
export function segment(id: string): string {
	return encodeURIComponent(id);
}
