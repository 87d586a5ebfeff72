// AWS Signature Version 4 for S3, written against node:crypto alone: a community node ships
// without runtime dependencies, and the AWS SDK is megabytes for a few HMACs. Every rule here was
// checked against @aws-sdk/client-s3 and @aws-sdk/s3-request-presigner 3.1164.0 (see
// test/transport/s3.test.ts, which compares the output byte for byte): same hosts, same paths,
// same query, same signatures.
import { createHash, createHmac } from 'node:crypto';

export interface S3Access {
	accessKeyId: string;
	secretAccessKey: string;
	/** Empty string or undefined: none. */
	sessionToken?: string;
	/** e.g. 'us-east-1', 'eu-central-1', 'auto' (Cloudflare R2). */
	region: string;
	/** An S3-compatible store, e.g. 'http://127.0.0.1:9000'; empty or undefined: AWS. */
	endpoint?: string;
	/** true: <endpoint>/<bucket>/<key>; false: <bucket>.<host>/<key> where the SDK would. */
	forcePathStyle?: boolean;
}

export interface S3Object {
	bucket: string;
	key: string;
	/** Empty string or undefined: the current version. */
	versionId?: string;
}

/** SHA-256 of an empty body: what the SDK's S3 client signs and sends for bodiless requests. */
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
const ALGORITHM = 'AWS4-HMAC-SHA256';
/** SigV4 refuses presigned URLs valid for more than a week. */
const MAX_EXPIRES_SECONDS = 604800;

/**
 * DNS suffixes of the AWS partitions other than the main one, by region pattern, as in the SDK's
 * partitions table (so cn-north-1 gets amazonaws.com.cn; anything else, 'auto' included,
 * amazonaws.com, as the SDK does).
 */
const PARTITION_SUFFIXES: Array<[RegExp, string]> = [
	[/^cn-\w+-\d+$/, 'amazonaws.com.cn'],
	[/^eusc-de-\w+-\d+$/, 'amazonaws.eu'],
	[/^us-iso-\w+-\d+$/, 'c2s.ic.gov'],
	[/^us-isob-\w+-\d+$/, 'sc2s.sgov.gov'],
	[/^eu-isoe-\w+-\d+$/, 'cloud.adc-e.uk'],
	[/^us-isof-\w+-\d+$/, 'csp.hci.ic.gov'],
];

/**
 * S3's URI encoding: every UTF-8 byte but A-Za-z0-9 - . _ ~ as %XX in upper case ('/' too).
 * encodeURIComponent leaves ! ' ( ) * alone, so those are done by hand, as the SDK does.
 */
function uriEncode(text: string): string {
	return encodeURIComponent(text).replace(
		/[!'()*]/g,
		(c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
	);
}

/** A key as a URL path: each segment encoded, the '/' between them kept (S3 does not normalise). */
function keyPath(key: string): string {
	return key.split('/').map(uriEncode).join('/');
}

/** The URL without its query (and fragment): what may be shown or logged. */
export function withoutQuery(url: string): string {
	const end = url.search(/[?#]/);
	return end === -1 ? url : url.slice(0, end);
}

/** A name that can be one DNS label of a bucket host: 3 to 63 lower-case letters, digits and hyphens, none at either end. */
function virtualHostable(bucket: string): boolean {
	return /^(?!-)(?!.*-$)[a-z0-9-]{3,63}$/.test(bucket);
}

/**
 * <bucket>.<host> where the SDK would: a DNS-label name on any host but an IP address; a dotted
 * name whose every label is one only over plain http (over https it would not match a wildcard
 * certificate). With an IP endpoint and such a dotted name the SDK builds 'captioning.videos.
 * 127.0.0.1' and fails on it ('Invalid URL'); we go path-style there, which every store serves.
 */
function virtualHosted(access: S3Access, s: Service, bucket: string): boolean {
	if (access.forcePathStyle || s.isIp) return false;
	if (virtualHostable(bucket)) return true;
	return s.protocol === 'http:' && bucket.split('.').every(virtualHostable);
}

interface Service {
	/** 'http:' or 'https:' */
	protocol: string;
	/** Host and port as the URL has them: lower case, without a default port. */
	host: string;
	/** The endpoint's path, '/' when it has none. */
	path: string;
	/** An IP address is never prefixed with a bucket. */
	isIp: boolean;
}

function service(access: S3Access): Service {
	const endpoint = access.endpoint?.trim();
	if (!endpoint) {
		const region = access.region?.trim();
		if (!region) throw new Error('An S3 region is needed to reach AWS');
		const suffix =
			PARTITION_SUFFIXES.find(([pattern]) => pattern.test(region))?.[1] ?? 'amazonaws.com';
		return { protocol: 'https:', host: `s3.${region}.${suffix}`, path: '/', isIp: false };
	}
	// The WHATWG URL parser, as the SDK uses for the endpoint: lower-cases the host, drops :80 and :443.
	if (!URL.canParse(endpoint)) throw new Error(`The S3 endpoint '${endpoint}' is not a URL`);
	const url = new URL(endpoint);
	if (
		(url.protocol !== 'http:' && url.protocol !== 'https:') ||
		url.search ||
		url.username ||
		url.password
	) {
		throw new Error(
			`The S3 endpoint '${endpoint}' must be a plain http:// or https:// address, without a query or user`,
		);
	}
	const isIp = /^\d{1,3}(\.\d{1,3}){3}$/.test(url.hostname) || url.hostname.startsWith('[');
	return { protocol: url.protocol, host: url.host, path: url.pathname || '/', isIp };
}

/**
 * Origin and path prefix for a bucket. The SDK appends the operation's path ('/' or '/{Key+}') to
 * the endpoint's path unless that is '/', so an endpoint path ending in '/' gives a '//' there:
 * kept, for the same URLs as the SDK.
 */
function bucketBase(
	access: S3Access,
	bucket: string,
): { origin: string; host: string; path: string; virtual: boolean } {
	const s = service(access);
	if (virtualHosted(access, s, bucket)) {
		const host = `${bucket}.${s.host}`;
		return {
			origin: `${s.protocol}//${host}`,
			host,
			path: s.path === '/' ? '' : s.path,
			virtual: true,
		};
	}
	const prefix = s.path.endsWith('/') ? s.path : `${s.path}/`;
	return {
		origin: `${s.protocol}//${s.host}`,
		host: s.host,
		path: `${prefix}${uriEncode(bucket)}`,
		virtual: false,
	};
}

/** Where the object is, without a query: https://bucket.s3.region.amazonaws.com/key and the like. */
export function objectUrl(access: S3Access, object: S3Object): string {
	const base = bucketBase(access, object.bucket);
	return `${base.origin}${base.path}/${keyPath(object.key)}`;
}

/**
 * Where requests about a bucket go (HEAD bucket, ListObjectsV2). Virtual-hosted: the SDK's URL
 * (https://bucket.host/). Path-style: <endpoint>/<bucket>, without the trailing '/' the SDK adds:
 * S3 signs the path as sent and serves both, but s3rver signs '/bucket' whatever was sent, so it
 * refuses '/bucket/' (403 SignatureDoesNotMatch).
 */
export function bucketUrl(access: S3Access, bucket: string): string {
	const base = bucketBase(access, bucket);
	return base.virtual ? `${base.origin}${base.path}/` : `${base.origin}${base.path}`;
}

/** Where requests about no bucket go (ListBuckets): https://s3.<region>.amazonaws.com/ or the endpoint. */
export function serviceUrl(access: S3Access): string {
	const s = service(access);
	return `${s.protocol}//${s.host}${s.path === '/' ? '/' : `${s.path}/`}`;
}

/** 's3://bucket/key' (key as written: spaces, unicode and '%' are not decoded); undefined otherwise. */
export function parseS3Uri(text: string): S3Object | undefined {
	const match = /^s3:\/\/([A-Za-z0-9._-]+)\/([\s\S]+)$/i.exec(text);
	return match ? { bucket: match[1], key: match[2] } : undefined;
}

const sha256Hex = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const hmac = (key: Buffer | string, text: string) =>
	createHmac('sha256', key).update(text, 'utf8').digest();

/** 20240506T070809Z and 20240506. */
function amzDate(date: Date): { long: string; short: string } {
	if (Number.isNaN(date.getTime())) throw new Error('The signing date is not a valid date');
	const long = date
		.toISOString()
		.replace(/[-:]/g, '')
		.replace(/\.\d{3}/, '');
	return { long, short: long.slice(0, 8) };
}

/** The canonical query: pairs encoded, then sorted by key (and by value for a repeated key). */
function canonicalQuery(pairs: Array<[string, string]>): string {
	return pairs
		.map(([k, v]) => [uriEncode(k), uriEncode(v)])
		.sort(([ka, va], [kb, vb]) => (ka < kb ? -1 : ka > kb ? 1 : va < vb ? -1 : va > vb ? 1 : 0))
		.map(([k, v]) => `${k}=${v}`)
		.join('&');
}

function requireCredentials(access: S3Access): void {
	if (!access.accessKeyId || !access.secretAccessKey)
		throw new Error('S3 access needs an access key ID and a secret access key');
	if (!access.region?.trim()) throw new Error('S3 access needs a region (for Cloudflare R2: auto)');
}

/** Signs a canonical request: the SigV4 string to sign, HMAC'd with the key derived for this day and region. */
function signature(
	access: S3Access,
	long: string,
	scope: string,
	canonicalRequest: string,
): string {
	const [short, region] = scope.split('/');
	const key = hmac(
		hmac(hmac(hmac(`AWS4${access.secretAccessKey}`, short), region), 's3'),
		'aws4_request',
	);
	const stringToSign = `${ALGORITHM}\n${long}\n${scope}\n${sha256Hex(canonicalRequest)}`;
	return createHmac('sha256', key).update(stringToSign, 'utf8').digest('hex');
}

/**
 * A presigned GET of the object, the same URL getSignedUrl(GetObjectCommand) gives. Like the SDK it
 * carries x-id=GetObject and x-amz-checksum-mode=ENABLED (both signed, as query parameters: a bare
 * GET of the URL works) and X-Amz-Content-Sha256=UNSIGNED-PAYLOAD; the query is sorted by name.
 */
export function presignGet(
	access: S3Access,
	object: S3Object,
	expiresInSeconds: number,
	signingDate: Date,
): string {
	requireCredentials(access);
	if (
		!Number.isInteger(expiresInSeconds) ||
		expiresInSeconds < 1 ||
		expiresInSeconds > MAX_EXPIRES_SECONDS
	) {
		throw new Error(
			`A presigned URL lasts 1 to ${MAX_EXPIRES_SECONDS} seconds (a week), not ${expiresInSeconds}`,
		);
	}
	const { long, short } = amzDate(signingDate);
	const scope = `${short}/${access.region.trim()}/s3/aws4_request`;
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
		['X-Amz-Expires', String(expiresInSeconds)],
		['X-Amz-SignedHeaders', 'host'],
	);
	if (access.sessionToken) query.push(['X-Amz-Security-Token', access.sessionToken]);
	const canonical = canonicalQuery(query);
	const canonicalRequest = `GET\n${path}\n${canonical}\nhost:${base.host}\n\nhost\nUNSIGNED-PAYLOAD`;
	const signed = canonicalQuery([
		...query,
		['X-Amz-Signature', signature(access, long, scope, canonicalRequest)],
	]);
	return `${base.origin}${path}?${signed}`;
}

/** Splits a URL we built (or one like it) into host, raw path and raw query; no normalisation. */
function splitUrl(url: string): { host: string; path: string; query: string } {
	const match = /^(https?):\/\/([^/?#]+)([^?#]*)(?:\?([^#]*))?/i.exec(url);
	if (!match) throw new Error(`Not an http(s) URL: ${withoutQuery(url)}`);
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
	requireCredentials(access);
	const { long, short } = amzDate(signingDate);
	const scope = `${short}/${access.region.trim()}/s3/aws4_request`;
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
	const canonicalHeaders: Array<[string, string]> = [['host', host], ...Object.entries(headers)];
	canonicalHeaders.sort(([a], [b]) => (a < b ? -1 : 1));
	const names = canonicalHeaders.map(([name]) => name).join(';');
	const canonicalRequest = [
		method,
		path,
		canonicalQuery(pairs),
		canonicalHeaders
			.map(([name, value]) => `${name}:${value.trim().replace(/\s+/g, ' ')}`)
			.join('\n') + '\n',
		names,
		EMPTY_SHA256,
	].join('\n');
	headers.authorization = `${ALGORITHM} Credential=${access.accessKeyId}/${scope}, SignedHeaders=${names}, Signature=${signature(access, long, scope, canonicalRequest)}`;
	return headers;
}
