// Who the credentials name: the service's checked Base URL and the rate limits of their key there.
import type { IAllExecuteFunctions } from 'n8n-workflow';
import { createHash } from 'node:crypto';

import type { KeyRateLimits } from './limits';
import { rateLimitsFor } from './limits';
import { refuse } from './errors';

/** Any n8n context a node runs in: each may send through the transport. */
export type ApiContext = IAllExecuteFunctions;

export const CREDENTIAL_NAME = 'captioningApi';

/** The credentials' Base URL as entered, trimmed, without a trailing slash (not yet checked). */
export function baseUrlOf(credentials: { baseUrl?: unknown }): string {
	return String(credentials.baseUrl ?? '')
		.trim()
		.replace(/\/+$/, '');
}

/** The service as the credentials name it: the checked Base URL, and the rate limits of their key there. */
type Service = { baseUrl: string; rateLimits: KeyRateLimits };

/**
 * The credentials' Base URL, checked and without a trailing slash, and the rate limits shared by
 * every request with the same key at that Base URL (found by a digest of both: the key is not kept).
 * Read for each request, as n8n's authenticated request reads the credentials: a run that outlives
 * an idle key's limits shares the ones the runs after it use.
 */
export async function serviceOf(ctx: ApiContext, itemIndex = 0): Promise<Service> {
	const credentials = await ctx.getCredentials(CREDENTIAL_NAME, itemIndex);
	const baseUrl = baseUrlOf(credentials);
	if (!httpUrl(baseUrl)?.pathname.endsWith('/v1'))
		refuse(
			ctx,
			itemIndex,
			`The Base URL "${baseUrl}" in the Captioning API credentials is not valid`,
			'It must be an http(s) URL ending in the version segment /v1, for example https://api.example.com/v1.',
		);
	const clear = inClear(baseUrl);
	if (clear)
		refuse(ctx, itemIndex, `The Base URL ${baseUrl} is not HTTPS`, `${clear} Nothing was sent.`);
	const apiKey = String(credentials.apiKey ?? '');
	const keyDigest = createHash('sha256').update(`${baseUrl}\n${apiKey}`).digest('hex');
	return { baseUrl, rateLimits: rateLimitsFor(keyDigest) };
}

/** A host plain http:// may reach: this machine or a private network (a test server), never the internet. */
const PRIVATE_HOST =
	/^(localhost|.+\.localhost|127(\.\d+){3}|10(\.\d+){3}|192\.168(\.\d+){2}|172\.(1[6-9]|2\d|3[01])(\.\d+){2}|\[::1\]|\[f[cd][0-9a-f]{2}:.*\])$/i;

/** Why the key may not travel to this Base URL, if so: plain http:// to a host on the internet. */
export function inClear(baseUrl: string): string | undefined {
	const url = httpUrl(baseUrl);
	if (url?.protocol !== 'http:' || PRIVATE_HOST.test(url.hostname)) return undefined;
	return `The Base URL ${url.origin} is not HTTPS, so the API key would cross the network in clear. Use its https:// address; plain http:// is taken only for localhost and private network addresses (a test server).`;
}

/** The text as an http(s) URL; undefined when it is none. */
export function httpUrl(text: string): URL | undefined {
	const url = URL.canParse(text) ? new URL(text) : undefined;
	return url?.protocol === 'http:' || url?.protocol === 'https:' ? url : undefined;
}

/**
 * Whether a URL lies under the Base URL: the same origin and, after the URL parser has resolved
 * dot segments (also percent-encoded ones), a path inside the Base URL's path. Only such URLs get
 * the API key: elsewhere on the same host (another API, the host's admin pages) it is not sent.
 */
export function underBaseUrl(url: string, baseUrl: string): boolean {
	const target = httpUrl(url);
	const base = httpUrl(baseUrl);
	if (!target || !base) return false;
	return (
		target.origin === base.origin &&
		target.username === '' &&
		target.password === '' &&
		target.pathname.startsWith(`${base.pathname.replace(/\/+$/, '')}/`)
	);
}
