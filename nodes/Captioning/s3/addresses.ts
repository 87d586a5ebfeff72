// Where an S3 object lives: the host, path and style (virtual-hosted or path) the AWS SDK would
// address it by, for AWS (China too) and S3-compatible stores. Checked against @aws-sdk/client-s3
// 3.1164.0 byte for byte (test/transport/s3.test.ts).
import { httpUrl } from '../transport/service';

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

/**
 * S3's URI encoding: every UTF-8 byte but A-Za-z0-9 - . _ ~ as %XX in upper case ('/' too).
 * encodeURIComponent leaves ! ' ( ) * alone, so those are done by hand, as the SDK does.
 */
export function uriEncode(text: string): string {
	return encodeURIComponent(text).replace(
		/[!'()*]/g,
		(c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
	);
}

/** A key as a URL path: each segment encoded, the '/' between them kept (S3 does not normalise). */
export function keyPath(key: string): string {
	return key.split('/').map(uriEncode).join('/');
}

/** A name that can be one DNS label of a bucket host: 3 to 63 lower-case letters, digits and hyphens, none at either end. */
function virtualHostable(bucket: string): boolean {
	return /^(?!-)(?!.*-$)[a-z0-9-]{3,63}$/.test(bucket);
}

/**
 * The endpoint's protocol, host (lower case, no default port), path ('/' when none), and whether
 * the host is an IP address (never prefixed with a bucket).
 */
function endpointOf(access: S3Access) {
	const endpoint = access.endpoint?.trim();
	if (!endpoint) {
		const region = access.region?.trim();
		if (!region) throw new Error('An S3 region is needed to reach AWS');
		// AWS China's DNS suffix, as the SDK's partitions table has it ('auto' gets amazonaws.com).
		const suffix = region.startsWith('cn-') ? 'amazonaws.com.cn' : 'amazonaws.com';
		return { protocol: 'https:', host: `s3.${region}.${suffix}`, path: '/', isIp: false };
	}
	// The WHATWG URL parser, as the SDK uses for the endpoint: lower-cases the host, drops :80 and :443.
	const url = httpUrl(endpoint);
	if (!url) throw new Error(`The S3 endpoint '${endpoint}' is not a URL (http:// or https://)`);
	if (url.search || url.username || url.password)
		throw new Error(`The S3 endpoint '${endpoint}' must be a plain address: no query, no user`);
	const isIp = /^\d{1,3}(\.\d{1,3}){3}$/.test(url.hostname) || url.hostname.startsWith('[');
	return { protocol: url.protocol, host: url.host, path: url.pathname || '/', isIp };
}

/**
 * Origin and path prefix for a bucket. The SDK appends the operation's path ('/' or '/{Key+}') to
 * the endpoint's path unless that is '/', so an endpoint path ending in '/' gives a '//' there:
 * kept, for the same URLs as the SDK.
 *
 * <bucket>.<host> where the SDK would: a DNS-label name on any host but an IP address; a dotted
 * name whose every label is one only over plain http (over https it would not match a wildcard
 * certificate). With an IP endpoint and such a dotted name the SDK builds 'captioning.videos.
 * 127.0.0.1' and fails on it ('Invalid URL'); we go path-style there, which every store serves.
 */
export function bucketBase(access: S3Access, bucket: string) {
	const s = endpointOf(access);
	const virtual =
		!access.forcePathStyle &&
		!s.isIp &&
		(virtualHostable(bucket) ||
			(s.protocol === 'http:' && bucket.split('.').every(virtualHostable)));
	const host = virtual ? `${bucket}.${s.host}` : s.host;
	const prefix = s.path.endsWith('/') ? s.path : `${s.path}/`;
	const path = virtual ? (s.path === '/' ? '' : s.path) : `${prefix}${uriEncode(bucket)}`;
	return { origin: `${s.protocol}//${host}`, host, path, virtual };
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
	const s = endpointOf(access);
	return `${s.protocol}//${s.host}${s.path === '/' ? '/' : `${s.path}/`}`;
}

/** The object as 's3://bucket/key', as users name it. */
export function s3Uri(object: S3Object): string {
	return `s3://${object.bucket}/${object.key}`;
}

/** 's3://bucket/key' (key as written: spaces, unicode and '%' are not decoded); undefined otherwise. */
export function parseS3Uri(text: string): S3Object | undefined {
	const match = /^s3:\/\/([A-Za-z0-9._-]+)\/([\s\S]+)$/i.exec(text);
	return match ? { bucket: match[1], key: match[2] } : undefined;
}

/** The credential's fields as the signer takes them; a bad endpoint is named before any request. */
export function s3AccessOf(data: Record<string, unknown>): S3Access | string {
	const field = (name: string) => String(data[name] ?? '').trim();
	const access: S3Access = {
		accessKeyId: field('accessKeyId'),
		secretAccessKey: field('secretAccessKey'),
		sessionToken: field('sessionToken') || undefined,
		region: field('region'),
		endpoint: field('endpoint').replace(/\/+$/, '') || undefined,
		forcePathStyle: Boolean(data.forcePathStyle),
	};
	if (!access.accessKeyId || !access.secretAccessKey)
		return 'Access Key ID and Secret Access Key are both needed';
	if (!/^[a-z0-9-]+$/.test(access.region))
		return `Region "${access.region}" is not a region name (e.g. eu-central-1; auto for Cloudflare R2)`;
	if (access.endpoint && !httpUrl(access.endpoint))
		return `Custom Endpoint "${access.endpoint}" is not an http(s) URL (e.g. https://<account-id>.r2.cloudflarestorage.com)`;
	return access;
}
