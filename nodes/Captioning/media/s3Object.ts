// Job → Create's S3 Object source (docs/s3.md): one signed HEAD checks the object
// (exists, readable, within the service's size), then the service gets a time-limited signed GET
// URL as media_url and fetches the media itself. No media byte passes through n8n.
// The credential is our own (captioningS3Api) and is tested here, by the node (`testedBy`): S3
// answers in XML, and each of its error codes has its own fix.
import type {
	ICredentialDataDecryptedObject,
	ICredentialsDecrypted,
	ICredentialTestFunctions,
	IExecuteFunctions,
	IHttpRequestOptions,
	IN8nHttpFullResponse,
	INodeCredentialTestResult,
} from 'n8n-workflow';

import type { S3Access, S3Object } from '../transport/s3';
import { bucketUrl, objectUrl, parseS3Uri, serviceUrl, signedHeaders } from '../transport/s3';
import { header, networkCode, refuse } from '../transport/errors';
import { pause } from '../transport/sleep';
import { MAX_UPLOAD_BYTES } from '../model/types';

export const S3_CREDENTIAL = 'captioningS3Api';

/**
 * Link Valid For: a day by default (see the field's description). At most 167 hours: the link is
 * signed at the start of the hour (see orders/place.ts) and lives an hour more than asked, within
 * the week SigV4 allows.
 */
export const LINK_HOURS = { default: 24, max: 167 };

/** What the HEAD found: the order's identity is the object and this version of it. */
export interface CheckedObject {
	object: S3Object;
	/** The object's URL without any query: what outputs and the identity show. */
	url: string;
	size: number;
	/** x-amz-version-id when the bucket is versioned, else the ETag: a new upload is a new order. */
	version: string;
}

/** The credential's fields as the signer takes them; a bad endpoint is named before any request. */
export function s3AccessOf(data: ICredentialDataDecryptedObject): S3Access | string {
	const access: S3Access = {
		accessKeyId: String(data.accessKeyId ?? '').trim(),
		secretAccessKey: String(data.secretAccessKey ?? '').trim(),
		sessionToken: String(data.sessionToken ?? '').trim() || undefined,
		region: String(data.region ?? '').trim(),
		endpoint:
			String(data.endpoint ?? '')
				.trim()
				.replace(/\/+$/, '') || undefined,
		forcePathStyle: Boolean(data.forcePathStyle),
	};
	if (!access.accessKeyId || !access.secretAccessKey)
		return 'Access Key ID and Secret Access Key are both needed';
	if (!/^[a-z0-9-]+$/.test(access.region))
		return `Region "${access.region}" is not a region name (e.g. eu-central-1; auto for Cloudflare R2)`;
	if (access.endpoint) {
		let url: URL | undefined;
		try {
			url = new URL(access.endpoint);
		} catch {
			url = undefined;
		}
		if (!url || !['http:', 'https:'].includes(url.protocol))
			return `Custom Endpoint "${access.endpoint}" is not an http(s) URL (e.g. https://<account-id>.r2.cloudflarestorage.com)`;
	}
	return access;
}

/** The item's bucket and key: Bucket Name and Object Key, or an s3://bucket/key in either. */
export function s3ObjectOf(ctx: IExecuteFunctions, i: number): S3Object {
	const bucketField = String(ctx.getNodeParameter('s3Bucket', i, '') ?? '').trim();
	const keyField = String(ctx.getNodeParameter('s3Key', i, '') ?? '');
	const uri = keyField.trim().startsWith('s3://')
		? keyField.trim()
		: bucketField.startsWith('s3://')
			? bucketField
			: undefined;
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
	if (!/^[a-zA-Z0-9][a-zA-Z0-9._-]{1,254}$/.test(bucketField)) {
		refuse(
			ctx,
			i,
			`Bucket Name "${bucketField}" is not a bucket name`,
			'A bucket name is 3-63 letters, digits, dots and hyphens (e.g. my-videos), without s3:// or slashes. Put the path inside the bucket into Object Key.',
		);
	}
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

/** The <Code> and <Message> of an S3 error body. */
function s3Error(body: unknown): { code: string; message: string } {
	const text = Buffer.isBuffer(body) ? body.toString('utf8') : typeof body === 'string' ? body : '';
	const tag = (name: string) => text.match(new RegExp(`<${name}>([^<]*)</${name}>`))?.[1] ?? '';
	return { code: tag('Code'), message: tag('Message') };
}

/** What an S3 error means and what to do, for an object or for the credential test. */
export function explainS3(
	status: number,
	code: string,
	region: string,
	bucketRegion: string,
	what: string,
): string {
	if (bucketRegion && bucketRegion !== region)
		return `${what} is in region ${bucketRegion}, but the credential says ${region}: set Region to ${bucketRegion} in the Captioning S3 Media credential.`;
	switch (code) {
		case 'InvalidAccessKeyId':
			return 'The Access Key ID is not known to this store: copy it again (and check Custom Endpoint: a key of one store is unknown to another).';
		case 'SignatureDoesNotMatch':
			return 'The Secret Access Key does not match the Access Key ID: copy the secret again.';
		case 'AuthorizationHeaderMalformed':
			return `The store refused the signature's scope, most often a wrong Region (now ${region}): set the bucket's region in the credential.`;
		case 'ExpiredToken':
		case 'TokenRefreshRequired':
			return 'The Session Token has expired: enter fresh temporary credentials.';
		case 'InvalidToken':
			return 'The Session Token is not valid for this key: enter the token issued with it, or leave Session Token empty for a permanent key.';
		case 'AccessDenied':
		case 'AllAccessDisabled':
			return `The credential may not read ${what}: give its user or role s3:GetObject on it (and s3:ListBucket to tell a missing key from a denied one).`;
		case 'NoSuchBucket':
			return `${what}: the bucket does not exist in this store. Check Bucket Name (and Custom Endpoint).`;
		case 'NoSuchKey':
			return `${what} does not exist: check Object Key (keys are case-sensitive; the AWS S3 node's Get Many lists them).`;
		default:
			break;
	}
	if (status === 403)
		return `The store refused to let this credential read ${what} (403): wrong Secret Access Key, or no s3:GetObject permission on it.`;
	if (status === 404)
		return `${what} does not exist: check Bucket Name and Object Key (keys are case-sensitive).`;
	if (status === 301 || status === 307)
		return `${what} is not served at this endpoint${bucketRegion ? ` (its region is ${bucketRegion})` : ''}: check Region and Custom Endpoint in the credential.`;
	return `The store answered ${status}${code ? ` ${code}` : ''}. Check the credential's Region and Custom Endpoint.`;
}

/**
 * A signed bodiless request to the store, retried on network errors and 5xx (S3's 503 SlowDown).
 * Answers the response, or the network code when none came.
 */
async function s3Request(
	send: (options: IHttpRequestOptions) => Promise<IN8nHttpFullResponse>,
	access: S3Access,
	method: 'GET' | 'HEAD',
	url: string,
): Promise<IN8nHttpFullResponse | { networkCode: string }> {
	for (let attempt = 1; ; attempt++) {
		// Signed per attempt: a signature is valid for 15 minutes from its date.
		const headers = signedHeaders(access, method, url, new Date());
		let result: IN8nHttpFullResponse | { networkCode: string };
		try {
			result = await send({
				method,
				url,
				headers,
				returnFullResponse: true,
				ignoreHttpStatusErrors: true,
				disableFollowRedirect: true,
				encoding: 'text',
				timeout: 30000,
			});
			if (result.statusCode < 500) return result;
		} catch (error) {
			result = { networkCode: networkCode(error) };
		}
		if (attempt >= 3) return result;
		await pause(500 * 2 ** (attempt - 1));
	}
}

/** In words: n8n replaces an error message that holds a code such as ECONNREFUSED with its own. */
const NETWORK_WORDS: Record<string, string> = {
	ECONNREFUSED: 'connection refused',
	ENOTFOUND: 'host not found',
	EAI_AGAIN: 'host not found',
	ETIMEDOUT: 'timed out',
	ECONNRESET: 'connection reset',
	ECONNABORTED: 'timed out',
};

function origin(access: S3Access): string {
	return new URL(serviceUrl(access)).origin;
}

/**
 * One HEAD of the object: it exists, this credential may read it, and it is within the service's
 * limit. Any problem is an error naming bucket and key, before anything is ordered.
 */
export async function checkS3Object(
	ctx: IExecuteFunctions,
	i: number,
	object: S3Object,
): Promise<CheckedObject & { access: S3Access }> {
	const access = s3AccessOf(await ctx.getCredentials(S3_CREDENTIAL, i));
	if (typeof access === 'string')
		refuse(
			ctx,
			i,
			`The Captioning S3 Media credential is not usable: ${access}`,
			'Fix it in the credential, then run again.',
		);
	const name = `S3 object s3://${object.bucket}/${object.key}`;
	const url = objectUrl(access, object);
	const response = await s3Request(
		async (options) => (await ctx.helpers.httpRequest(options)) as IN8nHttpFullResponse,
		access,
		'HEAD',
		url,
	);
	if ('networkCode' in response) {
		const code = response.networkCode;
		refuse(
			ctx,
			i,
			`Could not reach the S3 store at ${origin(access)} to check ${name}: ${NETWORK_WORDS[code] ?? 'no answer'}`,
			`Check Region and Custom Endpoint in the Captioning S3 Media credential, and the network between n8n and the store (${code}). Nothing was ordered.`,
		);
	}
	const status = response.statusCode;
	if (status !== 200) {
		// A HEAD has no body: the code, when there is one, comes in S3's x-amz-error-code header (not all stores send it).
		const code =
			header(response, 'x-amz-error-code') ||
			s3Error(response.body).code ||
			(status === 404 ? 'NoSuchKey' : '');
		refuse(
			ctx,
			i,
			`${name} cannot be read (${status}${code ? ` ${code}` : ''})`,
			`${explainS3(status, code, access.region, header(response, 'x-amz-bucket-region'), name)} Nothing was ordered.`,
		);
	}
	const size = Number(header(response, 'content-length'));
	if (Number.isFinite(size) && size > MAX_UPLOAD_BYTES) {
		refuse(
			ctx,
			i,
			`${name} is ${size} bytes, over the service's limit of ${MAX_UPLOAD_BYTES} bytes (5.24 GB)`,
			'Compress or split the media in S3 first (e.g. a lower bitrate or the audio track alone). Nothing was ordered.',
		);
	}
	if (size === 0)
		refuse(
			ctx,
			i,
			`${name} is empty (0 bytes)`,
			'Check the key: an empty object is often a folder marker (a key ending in /). Nothing was ordered.',
		);
	// 'null': a bucket whose versioning is suspended.
	const versionId = header(response, 'x-amz-version-id').replace(/^null$/, '');
	const version = versionId
		? `version ${versionId}`
		: `etag ${header(response, 'etag').replace(/"/g, '')}`;
	// A versioned bucket: the link names the version checked, so the service fetches what was checked.
	const checked: S3Object = versionId && !object.versionId ? { ...object, versionId } : object;
	return { access, object: checked, url, size, version };
}

/** The credential test: lists one object of Bucket to Test, or the buckets; each failure says its fix. */
export async function testS3Credential(
	this: ICredentialTestFunctions,
	credential: ICredentialsDecrypted,
): Promise<INodeCredentialTestResult> {
	const data = credential.data ?? {};
	const access = s3AccessOf(data);
	if (typeof access === 'string') return { status: 'Error', message: access };
	const bucket = String(data.testBucket ?? '').trim();
	// A listing under a prefix no one uses: the same checks (key, secret, region, s3:ListBucket), no object names read.
	const url = bucket
		? `${bucketUrl(access, bucket)}?list-type=2&max-keys=1&prefix=n8n-credential-test`
		: serviceUrl(access);
	const what = bucket ? `bucket ${bucket}` : 'the bucket list';
	const response = await s3Request(
		async (options) => {
			// A credential test gets one helper from n8n, the deprecated `request`, which n8n's
			// verification scanner refuses in a community node: so Node's own fetch (no redirects).
			const res = await fetch(options.url, {
				method: options.method,
				headers: options.headers as Record<string, string>,
				redirect: 'manual',
				signal: AbortSignal.timeout(30000),
			});
			return {
				statusCode: res.status,
				headers: Object.fromEntries(res.headers.entries()),
				body: await res.text(),
			};
		},
		access,
		'GET',
		url,
	);
	if ('networkCode' in response) {
		return {
			status: 'Error',
			message: `Could not reach the S3 store at ${origin(access)} (${response.networkCode}): check Custom Endpoint (empty for AWS) and Region`,
		};
	}
	if (response.statusCode === 200)
		return { status: 'OK', message: 'Connection tested successfully' };
	const { code, message } = s3Error(response.body);
	const bucketRegion =
		header(response, 'x-amz-bucket-region') ||
		(message.match(/expecting '([a-z0-9-]+)'/)?.[1] ?? '');
	if (code === 'AccessDenied' && !bucket) {
		return {
			status: 'Error',
			message:
				'The key and secret are right, but this credential may not list buckets (s3:ListAllMyBuckets). Enter a Bucket to Test that it may read, and test again.',
		};
	}
	return {
		status: 'Error',
		message: `${explainS3(response.statusCode, code, access.region, bucketRegion, what)} (${response.statusCode}${code ? ` ${code}` : ''})`,
	};
}
