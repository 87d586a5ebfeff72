// Bytes that do not go through apiRequest: the presigned upload PUT and caption file downloads.
import type { IHttpRequestOptions, IN8nHttpFullResponse } from 'n8n-workflow';

import type { FileBody, Upload } from '../model/types';
import { header, refuse } from './errors';
import { apiRequest, sendWithRetries } from './index';
import type { ApiContext } from './service';
import { CREDENTIAL_NAME, httpUrl, serviceOf, underBaseUrl } from './service';

export type Download = { data: Buffer; contentType: string };

const READ_AGAIN = 'Read the job again with Job → Get; if this persists, contact the service.';

/** How many redirects a captions link may lead through. */
const MAX_REDIRECTS = 5;

/**
 * The most bytes one download holds: a file becomes n8n binary data from memory. Twelve hours of
 * SRT is about 1 MB, so a file past this is no captions of the media.
 */
const MAX_FILE_BYTES = 50 * 1024 * 1024;

/** The most bytes of an answer that is not the file (an error, a redirect) read for its message. */
const MAX_ANSWER_BYTES = 64 * 1024;

/** A streamed answer's body (a Node.js Readable). */
type Body = AsyncIterable<Buffer> & { destroy(): void };

/** A body's bytes, up to `max` (or none when `declared` is past it); past it the stream is closed and `over` says how far it got. */
async function bytesUpTo(
	body: Body,
	max: number,
	declared: number,
): Promise<{ data: Buffer; over?: number }> {
	const chunks: Buffer[] = [];
	let size = declared > max ? declared : 0;
	if (size <= max)
		for await (const chunk of body) {
			size += chunk.length;
			if (size > max) break; // leaving the loop closes the stream
			chunks.push(chunk);
		}
	if (size <= max) return { data: Buffer.concat(chunks) };
	body.destroy();
	return { data: Buffer.alloc(0), over: size };
}

/**
 * Downloads a captions link, as listed by the service on the job read through the API (never a
 * link from a posted event). The API key goes only to URLs under the Base URL, where the download
 * counts against the key's reads;
 * any other http(s) link is fetched without it; other schemes are refused. Redirects are followed
 * hop by hop (at most MAX_REDIRECTS), each hop judged afresh: one that stays under the Base URL
 * keeps the key, one that leaves it goes without, as n8n's HTTP Request does from version 4.4 on.
 */
export async function downloadFile(
	ctx: ApiContext,
	url: string,
	/** What the file is, for errors: "The SRT captions". */
	name: string,
	itemIndex?: number,
): Promise<Download> {
	const fail = (message: string, description = READ_AGAIN) =>
		refuse(ctx, itemIndex, message, description);
	let link = url;
	for (let hop = 0; ; hop++) {
		if (!httpUrl(link))
			fail(
				'A captions link of the job is not an http(s) URL, so it was not fetched',
				`The service lists captions as http(s) links. ${READ_AGAIN}`,
			);
		const { response, over } = await fetchOnce(ctx, link, itemIndex);
		if (over !== undefined)
			fail(
				`${name} are ${over.toLocaleString('en-US')} bytes or more, over the ${MAX_FILE_BYTES.toLocaleString('en-US')} bytes one download may hold, so they were not downloaded`,
				'A caption file becomes n8n binary data from memory, so each download has a cap; twelve hours of subtitles is about 1 MB. Read the job with Job → Get and check its captions links; if this persists, contact the service.',
			);
		const location = header(response, 'location');
		if (response.statusCode < 300)
			return {
				data: response.body as Buffer,
				contentType: header(response, 'content-type') || 'application/octet-stream',
			};
		if (!location)
			fail(`A captions link answered ${response.statusCode} without saying where to go`);
		if (hop >= MAX_REDIRECTS)
			fail(
				`A captions link led through more than ${MAX_REDIRECTS} redirects, so it was not followed further`,
			);
		link = new URL(location, link).toString();
	}
}

/**
 * One hop of a download: with the key under the Base URL, without it elsewhere; a redirect handed
 * back. The body is read as it comes, up to MAX_FILE_BYTES (`over` when the file is past it).
 */
async function fetchOnce(
	ctx: ApiContext,
	url: string,
	itemIndex?: number,
): Promise<{ response: IN8nHttpFullResponse; over?: number }> {
	const { baseUrl, rateLimits } = await serviceOf(ctx, itemIndex);
	const withKey = underBaseUrl(url, baseUrl);
	const request: IHttpRequestOptions = {
		method: 'GET',
		url,
		encoding: 'stream',
		returnFullResponse: true,
		ignoreHttpStatusErrors: true,
		disableFollowRedirect: true,
		timeout: 60000,
	};
	let over: number | undefined;
	const response = await sendWithRetries(
		ctx,
		{
			retryable: true,
			rateLimit: withKey ? rateLimits.read : undefined,
			target: withKey
				? `the captioning service at ${new URL(baseUrl).origin}`
				: `the captions host ${new URL(url).origin}`,
			itemIndex,
			keep: (status) => status < 400 && status !== 304,
		},
		async () => {
			const streamed = (await (withKey
				? ctx.helpers.httpRequestWithAuthentication.call(ctx, CREDENTIAL_NAME, { ...request })
				: ctx.helpers.httpRequest({ ...request }))) as IN8nHttpFullResponse;
			const file = streamed.statusCode < 300;
			const bytes = await bytesUpTo(
				streamed.body as Body,
				file ? MAX_FILE_BYTES : MAX_ANSWER_BYTES,
				file ? Number(streamed.headers['content-length'] ?? 0) : 0,
			);
			over = file ? bytes.over : undefined;
			return { ...streamed, body: bytes.data };
		},
	);
	return { response, over };
}

/**
 * Creates the upload record, then PUTs the file to its presigned URL: streamed, with
 * Content-Length, without the API key (plain httpRequest, not the authenticated one) and without
 * following redirects. Returns the Upload without its URL, a credential of its own.
 */
export async function uploadFile(
	ctx: ApiContext,
	file: { fileName: string; mimeType: string; size: number; open: () => Promise<FileBody> },
	itemIndex: number,
) {
	const uploaded = { filename: file.fileName, content_type: file.mimeType, size_bytes: file.size };
	const { body } = await apiRequest<Upload>(ctx, 'POST', '/uploads', { body: uploaded, itemIndex });
	const { upload_url: url, ...upload } = body as Upload;
	const target = `the upload storage at ${new URL(url).origin}`;
	await sendWithRetries(ctx, { retryable: true, target, itemIndex }, async () => {
		const request: IHttpRequestOptions = {
			method: 'PUT',
			url,
			body: await file.open(), // a stream can be sent once: opened afresh for each attempt
			headers: { 'Content-Length': String(file.size) },
			returnFullResponse: true,
			ignoreHttpStatusErrors: true,
			disableFollowRedirect: true,
			// An idle limit, not a total: a 5 GB upload takes as long as it takes.
			timeout: 120000,
		};
		return (await ctx.helpers.httpRequest(request)) as IN8nHttpFullResponse;
	});
	return { ...upload, ...uploaded };
}
