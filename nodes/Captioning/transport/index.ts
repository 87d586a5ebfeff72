// The one way the nodes talk to the service: apiRequest over httpRequestWithAuthentication, with
// the key's rate limits and the retries of retries.ts, and errors mapped once (errors.ts).
import type { IDataObject, IHttpRequestMethods, IN8nHttpFullResponse } from 'n8n-workflow';

import { cancelSignal, KEY_RELIED_ON_MS, sendWithRetries } from './retries';
import type { ApiContext } from './service';
import { CREDENTIAL_NAME, serviceOf } from './service';
import { hideSecrets } from './secrets';
import { sleep } from './sleep';
import { mayHaveReached } from './networkErrors';

export { cancelSignal, CREDENTIAL_NAME, KEY_RELIED_ON_MS, sendWithRetries, sleep };

interface ApiRequestOptions {
	body?: IDataObject;
	qs?: IDataObject;
	/** Sent as Idempotency-Key; a POST /jobs is retried only when it has one. */
	idempotencyKey?: string;
	itemIndex?: number;
	/**
	 * Hears of each attempt whose outcome is unknown: it may have reached the service, and no answer
	 * said it was refused (a 500, 502 or 504, a reset, a timeout).
	 */
	onUnknownOutcome?: () => void;
}

/** A request to {base_url}{path} with the API key; returns the 2xx response or throws NodeApiError. */
export async function apiRequest<T>(
	ctx: ApiContext,
	method: IHttpRequestMethods,
	path: string,
	options: ApiRequestOptions = {},
): Promise<IN8nHttpFullResponse & { body: T }> {
	const { baseUrl, rateLimits } = await serviceOf(ctx, options.itemIndex);
	const response = await sendWithRetries(
		ctx,
		{
			// A POST /jobs goes again only with its Idempotency-Key: never a second job.
			retryable: method !== 'POST' || path !== '/jobs' || options.idempotencyKey !== undefined,
			rateLimit: method === 'GET' ? rateLimits.read : rateLimits.write,
			target: `the captioning service at ${new URL(baseUrl).origin}`,
			itemIndex: options.itemIndex,
		},
		async () => {
			const attempt = ctx.helpers.httpRequestWithAuthentication.call(ctx, CREDENTIAL_NAME, {
				method,
				url: `${baseUrl}${path}`,
				qs: options.qs,
				body: options.body,
				// A fresh headers object per attempt: authentication writes the key into it.
				headers:
					options.idempotencyKey === undefined ? {} : { 'Idempotency-Key': options.idempotencyKey },
				json: true,
				returnFullResponse: true,
				ignoreHttpStatusErrors: true,
				// n8n forwards credentials across origins on redirect by default: never follow one with the key.
				disableFollowRedirect: true,
				timeout: 60000,
			});
			// Heard before the caller sees the outcome (the first reaction to the attempt).
			attempt.then(
				({ statusCode }: IN8nHttpFullResponse) => {
					// 500, 502 and 504 do not say whether the request was carried out (shared/DESIGN.md).
					if (statusCode >= 500 && statusCode !== 503) options.onUnknownOutcome?.();
				},
				(error: unknown) => {
					if (mayHaveReached(error)) options.onUnknownOutcome?.();
				},
			);
			return (await attempt) as IN8nHttpFullResponse;
		},
	);
	// An S3 Object order's signed media_url and a Webhook URL's Secret Token come back in every job: never pass them on.
	hideSecrets(response.body);
	return response as IN8nHttpFullResponse & { body: T };
}
