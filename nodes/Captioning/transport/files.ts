// Bytes that do not go through apiRequest: the presigned upload PUT and caption file downloads.
import type { IHttpRequestOptions, IN8nHttpFullResponse } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import type { FileBody, Upload } from '../model/types';
import type { ApiContext, RetryPolicy } from './index';
import { apiRequest, sendWithRetries } from './index';
import { CREDENTIAL_NAME, serviceOf, underBaseUrl } from './service';
import type { Priority } from './rateLimits';

export interface PutOptions {
	uploadUrl: string;
	size: number;
	/** Opens the file afresh for each attempt: a stream can only be sent once. */
	open: () => Promise<FileBody>;
	itemIndex?: number;
	retry?: Partial<RetryPolicy>;
}

/**
 * PUTs raw bytes to a presigned upload URL: streamed, with Content-Length, without the API key
 * (plain httpRequest, not the authenticated one) and without following redirects.
 */
export async function putUploadBytes(ctx: ApiContext, options: PutOptions): Promise<void> {
	const target = `the upload storage at ${new URL(options.uploadUrl).origin}`;
	await sendWithRetries(
		ctx,
		{
			retryable: true,
			limit: 'storage',
			target,
			itemIndex: options.itemIndex,
			retry: options.retry,
		},
		async () => {
			const request: IHttpRequestOptions = {
				method: 'PUT',
				url: options.uploadUrl,
				body: await options.open(),
				headers: { 'Content-Length': String(options.size) },
				returnFullResponse: true,
				ignoreHttpStatusErrors: true,
				disableFollowRedirect: true,
				// An idle limit, not a total: a 5 GB upload takes as long as it takes.
				timeout: 120000,
			};
			return (await ctx.helpers.httpRequest(request)) as IN8nHttpFullResponse;
		},
	);
}

export interface Download {
	data: Buffer;
	contentType: string;
}

/** Refuses a captions link that is not http(s), before anything is sent. */
function checkLink(ctx: ApiContext, url: string, itemIndex?: number): void {
	let protocol = '';
	try {
		protocol = new URL(url).protocol;
	} catch {
		protocol = '';
	}
	if (protocol === 'https:' || protocol === 'http:') return;
	throw new NodeOperationError(
		ctx.getNode(),
		'A captions link of the job is not an http(s) URL, so it was not fetched',
		{
			itemIndex,
			description:
				'The service lists captions as http(s) links. Read the job again with Job → Get; if this persists, contact the service.',
		},
	);
}

/**
 * Downloads a captions link, as listed by the service on the job read through the API (never a
 * link from a posted event). The API key goes only to URLs under the Base URL (and then no
 * redirect is followed, and the download counts against the key's reads, at `low` priority by
 * default, after verifications and orders); any other http(s) link is fetched without it; other
 * schemes are refused.
 */
export async function downloadFile(
	ctx: ApiContext,
	url: string,
	options: { itemIndex?: number; priority?: Priority; retry?: Partial<RetryPolicy> } = {},
): Promise<Download> {
	const { itemIndex, retry } = options;
	checkLink(ctx, url, itemIndex);
	const { baseUrl, rateLimits } = await serviceOf(ctx, itemIndex);
	const withKey = underBaseUrl(url, baseUrl);
	const request: IHttpRequestOptions = {
		method: 'GET',
		url,
		encoding: 'arraybuffer',
		returnFullResponse: true,
		ignoreHttpStatusErrors: true,
		disableFollowRedirect: withKey,
		timeout: 60000,
	};
	const target = withKey
		? `the captioning service at ${new URL(baseUrl).origin}`
		: `the captions host ${new URL(url).origin}`;
	const limits = withKey
		? ({ limit: 'read', rateLimits } as const)
		: ({ limit: 'storage' } as const);
	const response = await sendWithRetries(
		ctx,
		{ retryable: true, ...limits, priority: options.priority ?? 'low', target, itemIndex, retry },
		async () =>
			withKey
				? ((await ctx.helpers.httpRequestWithAuthentication.call(ctx, CREDENTIAL_NAME, {
						...request,
					})) as IN8nHttpFullResponse)
				: ((await ctx.helpers.httpRequest({ ...request })) as IN8nHttpFullResponse),
	);
	const type = response.headers['content-type'];
	return {
		data: Buffer.from(response.body as ArrayBuffer),
		contentType: String(Array.isArray(type) ? type[0] : (type ?? 'application/octet-stream')),
	};
}
/** Creates the upload record, then PUTs the file to its presigned URL. Returns the Upload (without its URL). */
export async function uploadFile(
	ctx: ApiContext,
	file: { fileName: string; mimeType: string; size: number; open: () => Promise<FileBody> },
	itemIndex: number,
): Promise<
	Omit<Upload, 'upload_url'> & { filename: string; content_type: string; size_bytes: number }
> {
	const { body: upload } = await apiRequest<Upload>(ctx, 'POST', '/uploads', {
		body: { filename: file.fileName, content_type: file.mimeType, size_bytes: file.size },
		itemIndex,
	});
	await putUploadBytes(ctx, {
		uploadUrl: upload.upload_url,
		size: file.size,
		open: file.open,
		itemIndex,
	});
	// The presigned URL is a credential of its own: keep it out of the output.
	return {
		id: upload.id,
		object: upload.object,
		method: upload.method,
		max_size_bytes: upload.max_size_bytes,
		expires_at: upload.expires_at,
		filename: file.fileName,
		content_type: file.mimeType,
		size_bytes: file.size,
	};
}
