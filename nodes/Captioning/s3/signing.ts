// AWS Signature Version 4 for S3, written against node:crypto alone: a community node ships
// without runtime dependencies, and the AWS SDK is megabytes for a few HMACs. Checked against
// @aws-sdk/s3-request-presigner 3.1164.0 byte for byte (test/transport/s3.test.ts): same query,
// same signatures. Where an object lives: addresses.ts.
import { createHash, createHmac } from 'node:crypto';

import type { S3Access, S3Object } from './addresses';
import { withoutSignatures } from '../transport/secrets';
import { bucketBase, keyPath, uriEncode } from './addresses';

/** SHA-256 of an empty body: what the SDK's S3 client signs and sends for bodiless requests. */
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
const ALGORITHM = 'AWS4-HMAC-SHA256';
/** SigV4 refuses presigned URLs valid for more than a week. */
const MAX_EXPIRES_SECONDS = 604800;

const sha256Hex = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const hmac = (key: Buffer | string, text: string) =>
	createHmac('sha256', key).update(text, 'utf8').digest();

/** The date as 20240506T070809Z, and the signature's scope: 20240506/<region>/s3/aws4_request. */
function amzDate(date: Date, access: S3Access): { long: string; scope: string } {
	// The ISO date without its dashes, colons and milliseconds.
	const long = date.toISOString().replace(/[-:]|\.\d{3}/g, '');
	return { long, scope: `${long.slice(0, 8)}/${access.region.trim()}/s3/aws4_request` };
}

/** The canonical query: pairs encoded, then sorted by key (and by value for a repeated key). */
function canonicalQuery(pairs: Array<[string, string]>): string {
	return pairs
		.map(([k, v]) => [uriEncode(k), uriEncode(v)])
		.sort(([ka, va], [kb, vb]) => (ka < kb ? -1 : ka > kb ? 1 : va < vb ? -1 : va > vb ? 1 : 0))
		.map(([k, v]) => `${k}=${v}`)
		.join('&');
}

/** Signs a canonical request: the SigV4 string to sign, HMAC'd with the key derived for this day and region. */
function signature(secret: string, long: string, scope: string, canonicalRequest: string): string {
	const [short, region] = scope.split('/');
	const key = hmac(hmac(hmac(hmac(`AWS4${secret}`, short), region), 's3'), 'aws4_request');
	const stringToSign = `${ALGORITHM}\n${long}\n${scope}\n${sha256Hex(canonicalRequest)}`;
	return hmac(key, stringToSign).toString('hex');
}

/**
 * A presigned GET of the object, the same URL getSignedUrl(GetObjectCommand) gives. Like the SDK it
 * carries x-id=GetObject and x-amz-checksum-mode=ENABLED (both signed, as query parameters: a bare
 * GET of the URL works) and X-Amz-Content-Sha256=UNSIGNED-PAYLOAD; the query is sorted by name.
 */
export function presignGet(
	access: S3Access,
	object: S3Object,
	expiresIn: number,
	signingDate: Date,
): string {
	if (!Number.isInteger(expiresIn) || expiresIn < 1 || expiresIn > MAX_EXPIRES_SECONDS)
		throw new Error(`A presigned URL lasts 1 to ${MAX_EXPIRES_SECONDS} seconds, not ${expiresIn}`);
	const { long, scope } = amzDate(signingDate, access);
	const base = bucketBase(access, object.bucket);
	const path = `${base.path}/${keyPath(object.key)}`;
	const query: Array<[string, string]> = [['x-id', 'GetObject']];
	if (object.versionId) query.push(['versionId', object.versionId]);
	query.push(
		['x-amz-checksum-mode', 'ENABLED'],
		['X-Amz-Content-Sha256', 'UNSIGNED-PAYLOAD'],
		['X-Amz-Algorithm', ALGORITHM],
		['X-Amz-Credential', `${access.accessKeyId}/${scope}`],
		['X-Amz-Date', long],
		['X-Amz-Expires', String(expiresIn)],
		['X-Amz-SignedHeaders', 'host'],
	);
	if (access.sessionToken) query.push(['X-Amz-Security-Token', access.sessionToken]);
	const canonicalRequest = `GET\n${path}\n${canonicalQuery(query)}\nhost:${base.host}\n\nhost\nUNSIGNED-PAYLOAD`;
	const signed = canonicalQuery([
		...query,
		['X-Amz-Signature', signature(access.secretAccessKey, long, scope, canonicalRequest)],
	]);
	return `${base.origin}${path}?${signed}`;
}

/** Splits a URL we built (or one like it) into host, raw path and raw query; no normalisation. */
function splitUrl(url: string): { host: string; path: string; query: string } {
	const match = /^(https?):\/\/([^/?#]+)([^?#]*)(?:\?([^#]*))?/i.exec(url);
	if (!match) throw new Error(`Not an http(s) URL: ${withoutSignatures(url)}`);
	const scheme = match[1].toLowerCase();
	// The Host header fetch sends: lower case, no default port.
	const host = match[2].toLowerCase().replace(scheme === 'https' ? /:443$/ : /:80$/, '');
	return { host, path: match[3] || '/', query: match[4] ?? '' };
}

/**
 * Headers that sign a bodiless request (HEAD object, HEAD bucket, ListBuckets, a one-key
 * ListObjectsV2) in the Authorization header, as the SDK's S3 client signs it: host,
 * x-amz-content-sha256 (of the empty body), x-amz-date and the session token if any. Host is
 * signed but not returned: the HTTP client sets it from the URL.
 */
export function signedHeaders(
	access: S3Access,
	method: 'GET' | 'HEAD',
	url: string,
	signingDate: Date,
): Record<string, string> {
	const { long, scope } = amzDate(signingDate, access);
	const { host, path, query } = splitUrl(url);
	const pairs = query
		.split('&')
		.filter((part) => part !== '')
		.map((part): [string, string] => {
			const eq = part.indexOf('=');
			const [k, v] = eq === -1 ? [part, ''] : [part.slice(0, eq), part.slice(eq + 1)];
			return [decodeURIComponent(k), decodeURIComponent(v)];
		});
	const headers: Record<string, string> = {
		'x-amz-content-sha256': EMPTY_SHA256,
		'x-amz-date': long,
	};
	if (access.sessionToken) headers['x-amz-security-token'] = access.sessionToken;
	// Host, then the x-amz- headers: already in the order SigV4 sorts them in.
	const signed = Object.entries({ host, ...headers });
	const names = signed.map(([name]) => name).join(';');
	const canonicalHeaders = signed
		.map(([name, value]) => `${name}:${value.trim().replace(/\s+/g, ' ')}\n`)
		.join('');
	const canonicalRequest = `${method}\n${path}\n${canonicalQuery(pairs)}\n${canonicalHeaders}\n${names}\n${EMPTY_SHA256}`;
	headers.authorization = `${ALGORITHM} Credential=${access.accessKeyId}/${scope}, SignedHeaders=${names}, Signature=${signature(access.secretAccessKey, long, scope, canonicalRequest)}`;
	return headers;
}
