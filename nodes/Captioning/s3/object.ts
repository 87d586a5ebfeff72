// Job → Create's S3 Object source (docs/s3.md): one signed HEAD checks the object (exists,
// readable, within the service's size), then the service gets a time-limited signed GET URL as
// media_url and fetches the media itself. No media byte passes through n8n.
import type { IExecuteFunctions, IN8nHttpFullResponse } from 'n8n-workflow';

import type { S3Access, S3Object } from './addresses';
import { objectUrl, parseS3Uri, s3AccessOf, s3Uri, serviceUrl } from './addresses';
import { header, refuse } from '../transport/errors';
import { sendWithRetries } from '../transport/retries';
import { MAX_UPLOAD_BYTES } from '../model/types';
import { explainS3 } from './s3Errors';

/**
 * Link Valid For: a day by default (see the field's description). At most 167 hours: the link lives
 * an hour more than asked (orders/place.ts), within the week SigV4 allows.
 */
export const LINK_HOURS = { default: 24, max: 167 };

/** What the HEAD found: the object and this version of it make the order what it is. */
export interface HeadedObject {
	object: S3Object;
	/** The object's URL without any query: what outputs and the order's JSON show. */
	url: string;
	/** x-amz-version-id when the bucket is versioned, else the ETag: a new upload is a new order. */
	version: string;
}

/** The item's bucket and key: Bucket Name and Object Key, or an s3://bucket/key in either. */
export function s3ObjectOf(ctx: IExecuteFunctions, i: number): S3Object {
	const bucketField = String(ctx.getNodeParameter('s3Bucket', i, '') ?? '').trim();
	const keyField = String(ctx.getNodeParameter('s3Key', i, '') ?? '');
	const uri = [keyField.trim(), bucketField].find((field) => field.startsWith('s3://'));
	if (uri) {
		const parsed = parseS3Uri(uri);
		if (!parsed)
			refuse(
				ctx,
				i,
				`"${uri}" is not an S3 object`,
				'Write it as s3://bucket/key, e.g. s3://my-videos/lectures/intro.mp4, or fill Bucket Name and Object Key separately.',
			);
		return parsed;
	}
	if (!bucketField)
		refuse(
			ctx,
			i,
			'Bucket Name is empty',
			'Enter the bucket that holds the video (e.g. my-videos), or put a whole s3://bucket/key in Object Key.',
		);
	if (!/^[a-zA-Z0-9][a-zA-Z0-9._-]{1,254}$/.test(bucketField))
		refuse(
			ctx,
			i,
			`Bucket Name "${bucketField}" is not a bucket name`,
			'A bucket name is 3-63 letters, digits, dots and hyphens (e.g. my-videos), without s3:// or slashes. Put the path inside the bucket into Object Key.',
		);
	if (keyField === '')
		refuse(
			ctx,
			i,
			'Object Key is empty',
			"Enter the object's key, e.g. lectures/intro.mp4 (the Key field of the AWS S3 node's Get Many output).",
		);
	if (Buffer.byteLength(keyField, 'utf8') > 1024)
		refuse(
			ctx,
			i,
			'Object Key is longer than 1024 bytes',
			'S3 keys are at most 1024 bytes: check the expression that builds it.',
		);
	return { bucket: bucketField, key: keyField };
}

/** Refuses what the HEAD answered when it is not a readable object within the service's size. */
function refuseUnreadable(
	ctx: IExecuteFunctions,
	i: number,
	access: S3Access,
	name: string,
	response: IN8nHttpFullResponse,
): void {
	const status = response.statusCode;
	if (status !== 200) {
		// A HEAD has no body: the code, when there is one, comes in S3's x-amz-error-code header (not all stores send it).
		const code = header(response, 'x-amz-error-code') || (status === 404 ? 'NoSuchKey' : '');
		const bucketRegion = header(response, 'x-amz-bucket-region');
		refuse(
			ctx,
			i,
			`${name} cannot be read (${status}${code ? ` ${code}` : ''})`,
			`${explainS3(status, code, access.region, bucketRegion, name)} Nothing was ordered.`,
		);
	}
	// A store may leave Content-Length out: the size is then unknown, not 0.
	const size = Number(header(response, 'content-length') || NaN);
	if (Number.isFinite(size) && size > MAX_UPLOAD_BYTES)
		refuse(
			ctx,
			i,
			`${name} is ${size} bytes, over the service's limit of ${MAX_UPLOAD_BYTES} bytes (5.24 GB)`,
			'Compress or split the media in S3 first (e.g. a lower bitrate or the audio track alone). Nothing was ordered.',
		);
	if (size === 0)
		refuse(
			ctx,
			i,
			`${name} is empty (0 bytes)`,
			'Check the key: an empty object is often a folder marker (a key ending in /). Nothing was ordered.',
		);
}

/**
 * One HEAD of the object: it exists, this credential may read it, and it is within the service's
 * limit. Any problem is an error naming bucket and key, before anything is ordered.
 */
export async function headS3Object(
	ctx: IExecuteFunctions,
	i: number,
	object: S3Object,
): Promise<HeadedObject & { access: S3Access }> {
	const access = s3AccessOf(await ctx.getCredentials('captioningS3Api', i));
	if (typeof access === 'string')
		refuse(
			ctx,
			i,
			`The Captioning S3 Media credential is not usable: ${access}`,
			'Fix it in the credential, then run again.',
		);
	const url = objectUrl(access, object);
	// The object's HEAD, signed by the credential's `authenticate` when each attempt is sent, with the
	// transport's retries (network errors and 5xx, S3's 503 SlowDown among them).
	const response = await sendWithRetries(
		ctx,
		{
			retryable: true,
			target: `the S3 store at ${new URL(serviceUrl(access)).origin}`,
			lookAt:
				'Region and Custom Endpoint in the Captioning S3 Media credential (nothing was ordered)',
			itemIndex: i,
			keep: (status) => status < 500,
		},
		async () =>
			(await ctx.helpers.httpRequestWithAuthentication.call(ctx, 'captioningS3Api', {
				method: 'HEAD',
				url,
				returnFullResponse: true,
				ignoreHttpStatusErrors: true,
				disableFollowRedirect: true,
				timeout: 30000,
			})) as IN8nHttpFullResponse,
	);
	refuseUnreadable(ctx, i, access, `S3 object ${s3Uri(object)}`, response);
	// 'null': a bucket whose versioning is suspended.
	const versionId = header(response, 'x-amz-version-id').replace(/^null$/, '');
	const version = versionId
		? `version ${versionId}`
		: `etag ${header(response, 'etag').replace(/"/g, '')}`;
	// A versioned bucket: the link names the version checked, so the service fetches what was checked.
	const checked: S3Object = versionId && !object.versionId ? { ...object, versionId } : object;
	return { access, object: checked, url, version };
}
