// A real S3-compatible server on loopback for the tests: @20minutes/s3rver 4.0.4 (a maintained
// fork of s3rver that checks Signature Version 4, in headers and in presigned URLs; plain s3rver
// accepts any signature). Every request is logged, so a test can count what reached the store.
// s3rver lacks ListParts, which n8n's AWS S3 node reads to finish a multipart upload (every file
// n8n keeps on disk): this server answers it from the parts it saw uploaded.
// Why not a Debian package: Debian 12 has no MinIO or other small S3 server, only Ceph's radosgw,
// which needs a Ceph cluster.
import { mkdtempSync, rmSync, truncateSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** SHA-256 of an empty body. */
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

export interface S3Request {
	method: string;
	/** Path and query, as received. */
	url: string;
	status: number;
	/** When it arrived (ms). */
	at: number;
	/** Bytes of the response body sent (what a GET of the object moved). */
	bytes: number;
}

export interface S3Server {
	/** http://127.0.0.1:<port> */
	endpoint: string;
	accessKeyId: string;
	secretAccessKey: string;
	bucket: string;
	requests: S3Request[];
	/** Stores an object, as a PUT with the server's own credentials would (no signature needed here). */
	put(key: string, body: Buffer | string): Promise<void>;
	/**
	 * Stores an object of `size` bytes in a moment, whatever the size: a 1 KiB head, then the file
	 * s3rver keeps it in is extended (sparse, zeros) to the size. s3rver answers HEAD and ranged GETs
	 * from that file, so a 2 GiB video costs neither the time nor the disk to write it.
	 */
	putLarge(key: string, size: number): Promise<void>;
	close(): Promise<void>;
}

/** S3's ListParts answer for the parts of one multipart upload. */
function listParts(
	res: ServerResponse,
	uploaded: Array<{ number: number; etag: string; size: number }>,
): void {
	const xml = uploaded
		.sort((a, b) => a.number - b.number)
		.map(
			(p) =>
				`<Part><PartNumber>${p.number}</PartNumber><ETag>${p.etag.replaceAll('"', '&quot;')}</ETag><Size>${p.size}</Size></Part>`,
		)
		.join('');
	res.setHeader('content-type', 'application/xml');
	res.end(
		`<?xml version="1.0" encoding="UTF-8"?><ListPartsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><IsTruncated>false</IsTruncated>${xml}</ListPartsResult>`,
	);
}

interface S3rverLike {
	configureBuckets(): Promise<void>;
	callback(): (req: IncomingMessage, res: ServerResponse) => void;
	store: { putObject(object: unknown): Promise<unknown> };
}

/**
 * Starts the server with one bucket (each request delayed by latencyMs, for the bench). Its name has a dot on purpose: n8n's AWS S3 node talks to a
 * custom endpoint path-style only for such names (otherwise it goes to <bucket>.s3.amazonaws.com).
 */
export async function startS3(bucket = 'captioning.videos', latencyMs = 0): Promise<S3Server> {
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	const S3rver = require('@20minutes/s3rver') as new (options: object) => S3rverLike;
	const directory = mkdtempSync(path.join(tmpdir(), 'captioning-s3-'));
	const s3 = new S3rver({ silent: true, directory, configureBuckets: [{ name: bucket }] });
	await s3.configureBuckets();
	const handle = s3.callback();
	const requests: S3Request[] = [];
	const parts = new Map<string, Array<{ number: number; etag: string; size: number }>>();
	const server = createServer((req, res) => {
		// n8n 1.x signs with aws4, which for a non-AWS host leaves out x-amz-content-sha256; for the
		// bodiless requests it sends, the hash it signed is the empty body's, so the check still holds.
		if (req.headers.authorization && !req.headers['x-amz-content-sha256'])
			req.headers['x-amz-content-sha256'] = EMPTY_SHA256;
		const entry: S3Request = {
			method: req.method ?? '',
			url: req.url ?? '',
			status: 0,
			at: Date.now(),
			bytes: 0,
		};
		requests.push(entry);
		// A store (or a proxy before it) that leaves Content-Length out of a HEAD: keys with "unsized".
		if (req.method === 'HEAD' && entry.url.includes('unsized')) {
			const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse;
			res.writeHead = ((...args: unknown[]) => {
				res.removeHeader('content-length');
				return writeHead(...args);
			}) as typeof res.writeHead;
		}
		const write = res.write.bind(res) as (chunk: unknown, ...rest: unknown[]) => boolean;
		const count = (chunk: unknown) => {
			if (chunk && typeof chunk !== 'function') entry.bytes += Buffer.byteLength(chunk as Buffer);
		};
		res.write = ((chunk: unknown, ...rest: unknown[]) => {
			count(chunk);
			return write(chunk, ...rest);
		}) as typeof res.write;
		const end = res.end.bind(res) as (chunk?: unknown, ...rest: unknown[]) => ServerResponse;
		res.end = ((chunk?: unknown, ...rest: unknown[]) => {
			count(chunk);
			return end(chunk, ...rest);
		}) as typeof res.end;
		res.on('finish', () => (entry.status = res.statusCode));
		const query = new URL(req.url ?? '/', 'http://s3').searchParams;
		const uploadId = query.get('uploadId');
		if (req.method === 'PUT' && uploadId && query.get('partNumber'))
			res.on('finish', () =>
				parts.set(uploadId, [
					...(parts.get(uploadId) ?? []),
					{
						number: Number(query.get('partNumber')),
						etag: String(res.getHeader('etag') ?? ''),
						size: Number(req.headers['content-length'] ?? 0),
					},
				]),
			);
		if (req.method === 'GET' && uploadId) return listParts(res, parts.get(uploadId) ?? []);
		// A store that far away (the bench's latency runs): each request waits before it is handled.
		if (latencyMs > 0) setTimeout(() => handle(req, res), latencyMs);
		else handle(req, res);
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
	const s3Server: S3Server = {
		endpoint,
		accessKeyId: 'S3RVER',
		secretAccessKey: 'S3RVER',
		bucket,
		requests,
		async put(key, body) {
			// A plain PUT: s3rver lets unsigned requests through (only wrong signatures are refused).
			const res = await fetch(
				`${endpoint}/${bucket}/${key.split('/').map(encodeURIComponent).join('/')}`,
				{
					method: 'PUT',
					body: typeof body === 'string' ? body : new Uint8Array(body),
					headers: { 'content-type': 'video/mp4' },
				},
			);
			if (!res.ok) throw new Error(`PUT ${key}: ${res.status} ${await res.text()}`);
		},
		async putLarge(key, size) {
			const head = Buffer.alloc(Math.min(1024, size), 0x42);
			await s3Server.put(key, head);
			truncateSync(path.join(directory, bucket, `${key}._S3rver_object`), size);
		},
		async close() {
			server.closeAllConnections();
			await new Promise((resolve) => server.close(resolve));
			rmSync(directory, { recursive: true, force: true });
		},
	};
	return s3Server;
}
