// Sending a request until it gets an answer worth keeping: 429, 5xx and network failures are tried
// again with backoff and jitter, honouring Retry-After (and the 5 s a 503 asks for); any other
// answer ends at once. A write's 429 goes again in its turn until `maxTurnWaitMs` has passed since
// its first try, however many attempts that takes: an order can wait, and another process on the
// workspace may take the service's refill many times in a row. Each attempt waits for its place
// within the run's Concurrency and the key's rate limits. A failure that would meet the same again
// is not retried: a certificate the connection refused, a request n8n's own policy refused, or
// n8n's own error.
import type { IN8nHttpFullResponse } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import type { RateLimit } from './limits';
import { RunStopped, rateLimitSettings, runConcurrency, WaitedTooLong } from './limits';
import { apiError, describe, header, serviceError } from './errors';
import {
	certificateError,
	certificateProblem,
	networkCodeOf,
	networkError,
	notSentError,
	refusedByN8n,
} from './networkErrors';
import type { Unanswered } from './networkErrors';
import type { ApiContext } from './service';
import { sleep } from './sleep';

/** A request's attempts: Retry-After and a 503's 5 s aside, the backoff doubles from base to max, with jitter. */
const RETRY = {
	/** Attempts in all, the first included. */
	maxAttempts: 6,
	baseDelayMs: 500,
	maxDelayMs: 8000,
	/** The longest a request waits for its turn under the key's rate limits, and a write goes again after 429s. */
	maxTurnWaitMs: 5 * 60000,
};

/**
 * How long after its first try an Idempotency-Key is relied on (shared/DESIGN.md: for the retries
 * of one request): the longest a request's tries go on.
 */
export const KEY_RELIED_ON_MS = RETRY.maxTurnWaitMs;

interface SendOptions extends Unanswered {
	/** May a failed attempt be sent again? False for a POST /jobs without Idempotency-Key. */
	retryable: boolean;
	/** The key's limit it counts against, its reads or its writes (none for a storage host). */
	rateLimit?: RateLimit;
	/** The answers handed back as they are, not retried nor turned into errors (default: 2xx). */
	keep?: (status: number) => boolean;
}

export function cancelSignal(ctx: ApiContext): AbortSignal | undefined {
	return 'getExecutionCancelSignal' in ctx ? ctx.getExecutionCancelSignal() : undefined;
}

/** Exponential backoff with "equal jitter": half fixed, half random, so parallel items spread out. */
function backoffMs(attempt: number): number {
	const ceiling = Math.min(RETRY.maxDelayMs, RETRY.baseDelayMs * 2 ** (attempt - 1));
	return ceiling / 2 + Math.random() * (ceiling / 2);
}

/** One request's attempts: the places each waits for, and what decides whether there is another. */
class Attempts {
	readonly cancel: AbortSignal | undefined;
	private readonly since = Date.now();

	constructor(
		private readonly ctx: ApiContext,
		private readonly options: SendOptions,
	) {
		this.cancel = cancelSignal(ctx);
	}

	/** Waits for a place in the run's Concurrency, then in the key's rate limit; resolves with what frees both. */
	async turn(): Promise<() => void> {
		const { ctx, options } = this;
		const run = runConcurrency.get(ctx);
		let release = () => {};
		let waited: unknown;
		try {
			if (run) release = await run.take(options.itemIndex);
			// The execution's cancel signal and the run's stop: either ends a wait for a turn.
			const signals = [this.cancel, run?.stopSignal].filter((s) => s !== undefined);
			const done = await options.rateLimit?.take(0, RETRY.maxTurnWaitMs, AbortSignal.any(signals));
			return () => (done?.(), release());
		} catch (error) {
			release();
			waited = error;
		}
		// Not sent: the execution was cancelled, the run stopped (another item failed), or it waited too long.
		if (this.cancel?.aborted) throw this.cancelled();
		if (run?.stopSignal.aborted) throw new RunStopped();
		throw new NodeOperationError(ctx.getNode(), waited as Error, {
			itemIndex: options.itemIndex,
			description:
				waited instanceof WaitedTooLong
					? 'Every workflow that uses this API key shares its rate limit, and others kept it busy. Nothing was sent, so nothing was ordered or charged: run again, lower Concurrency, or use a key of its own for this workflow.'
					: undefined,
		});
	}

	cancelled(): NodeOperationError {
		return new NodeOperationError(
			this.ctx.getNode(),
			'The execution was cancelled while a request to the captioning service was under way',
			{ itemIndex: this.options.itemIndex },
		);
	}

	/** After a request that got no answer: the wait before the next attempt, or the error to throw. */
	afterFailure(error: unknown, attempt: number): number {
		const { ctx, options } = this;
		if (this.cancel?.aborted) throw this.cancelled();
		// A certificate the connection refused, n8n's own policy, or n8n's own error (no network code):
		// sending it again would meet the same.
		if (certificateProblem(error)) throw certificateError(ctx.getNode(), error, options);
		if (refusedByN8n(error) || !networkCodeOf(error))
			throw notSentError(ctx.getNode(), error, options);
		if (!options.retryable || attempt >= RETRY.maxAttempts)
			throw networkError(ctx.getNode(), error, attempt, options);
		return backoffMs(attempt);
	}

	/**
	 * After an answer: undefined for one to keep (2xx), the wait before the next attempt (0 when the
	 * key's rate limit holds it), or the error to throw.
	 */
	afterAnswer(response: IN8nHttpFullResponse, attempt: number): number | undefined {
		const { ctx, options } = this;
		const status = response.statusCode;
		// Retry-After in ms: the service gives seconds (shared/DESIGN.md).
		const raw = header(response, 'retry-after');
		const seconds = raw === '' ? NaN : Number(raw);
		const retryAfter = Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : undefined;
		// A 429 holds the key's limit for every request (limits.ts).
		options.rateLimit?.observe(status, retryAfter);
		if (options.keep ? options.keep(status) : status >= 200 && status < 300) return undefined;
		const fail = (why?: 'once' | 'asked') => {
			const e = serviceError(response);
			return apiError(ctx.getNode(), e, describe(e, attempt, why), options.itemIndex);
		};
		const waitsOut =
			status === 429 &&
			options.rateLimit?.kind === 'write' &&
			Date.now() - this.since < RETRY.maxTurnWaitMs;
		if (status !== 429 && status < 500) throw fail();
		if (attempt >= RETRY.maxAttempts && !waitsOut) throw fail();
		if (!options.retryable) throw fail('once');
		const delay =
			retryAfter ?? (status === 503 ? rateLimitSettings.unavailableMs : backoffMs(attempt));
		if (delay > rateLimitSettings.maxHoldMs) throw fail('asked');
		if (status === 429 && options.rateLimit) return 0; // it goes again in its turn, once the hold has passed
		// A little jitter on top of Retry-After, so a batch does not come back in one burst.
		return delay + Math.random() * Math.min(250, RETRY.baseDelayMs);
	}
}

/**
 * Sends with retries (see the top of this file). `send` must make a fresh request each time (a
 * stream body is reopened by the caller).
 */
export async function sendWithRetries(
	ctx: ApiContext,
	options: SendOptions,
	send: () => Promise<IN8nHttpFullResponse>,
): Promise<IN8nHttpFullResponse> {
	const attempts = new Attempts(ctx, options);
	for (let attempt = 1; ; attempt++) {
		const done = await attempts.turn();
		let response: IN8nHttpFullResponse | undefined;
		let failure: unknown;
		try {
			response = await send();
		} catch (error) {
			failure = error;
		} finally {
			done();
		}
		const wait = response
			? attempts.afterAnswer(response, attempt)
			: attempts.afterFailure(failure, attempt);
		if (wait === undefined) return response!;
		if (wait > 0) await sleep(wait, attempts.cancel);
	}
}
