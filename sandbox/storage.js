'use strict';
// The storage host: presigned PUTs of uploads (streamed to a hash, with the presigned URL as the only
// credential) and caption files behind signed links (when captions live on another host).
const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');
const { pipeline } = require('node:stream/promises');
const { Writable } = require('node:stream');

const { send, sendError } = require('./http');
const { sendCaptions, MAX_UPLOAD_BYTES } = require('./routes');

function createStorage(ctx) {
	const { ledger, workspaces } = ctx;

	/** A presigned PUT: Content-Length required, no Authorization, at most MAX_UPLOAD_BYTES. */
	async function putUpload(req, res, url, id, deny) {
		const upload = [...workspaces.values()].map((w) => w.uploads.get(id)).find(Boolean);
		const expires = Number(url.searchParams.get('expires'));
		if (!upload || url.searchParams.get('sig') !== ctx.sign(`upload:${id}:${expires}`))
			return deny(403, 'signature_mismatch', 'The upload URL is not valid.');
		upload.puts += 1;
		const fault = ctx.faults.takeFault('PUT /uploads');
		if (fault && fault.kind === 'redirect') {
			req.resume();
			res.writeHead(307, { location: fault.location }).end();
			return;
		}
		if (fault) {
			req.resume();
			return ctx.faults.applyFault(fault, res);
		}
		if (req.headers.authorization !== undefined) {
			upload.authorizationSeen = true;
			return deny(
				400,
				'invalid_argument',
				'Only one auth mechanism allowed: the URL is presigned, send no Authorization header.',
			);
		}
		if (Date.now() > expires)
			return deny(403, 'request_expired', 'The upload URL has expired; create a new upload.');
		const length = req.headers['content-length'];
		if (length === undefined)
			return deny(411, 'missing_content_length', 'Send a Content-Length header.');
		upload.contentLengthSent = Number(length);
		if (Number(length) > MAX_UPLOAD_BYTES)
			return deny(413, 'entity_too_large', 'The file exceeds 5242880000 bytes.');
		const hash = crypto.createHash('sha256');
		let received = 0;
		const count = async function* (source) {
			for await (const chunk of source) {
				received += chunk.length;
				hash.update(chunk);
				yield chunk;
			}
		};
		const sink = ctx.options.uploadDir
			? fs.createWriteStream(path.join(ctx.options.uploadDir, upload.id))
			: new Writable({ write: (_chunk, _enc, cb) => cb() });
		try {
			await pipeline(req, count, sink);
		} catch {
			upload.complete = false;
			return;
		}
		upload.receivedBytes = received;
		upload.sha256 = hash.digest('hex');
		upload.complete = received === Number(length);
		upload.receivedAt = Date.now();
		res.writeHead(200, { etag: `"${upload.sha256.slice(0, 32)}"`, 'content-length': 0 }).end();
	}

	/** Handles a request at the storage origin. */
	return async function storage(req, res) {
		const url = new URL(req.url, ctx.storageOrigin);
		const record = {
			method: req.method,
			path: url.pathname,
			authorization: req.headers.authorization !== undefined,
			status: null,
			at: Date.now(),
		};
		ledger.storageRequests.push(record);
		res.on('finish', () => (record.status = res.statusCode));
		const deny = (status, code, message) => {
			req.resume();
			send(res, status, { error: { code, message, param: '' } });
		};
		const m = /^\/uploads\/([0-9a-f-]+)$/.exec(url.pathname);
		if (req.method === 'PUT' && m) return await putUpload(req, res, url, m[1], deny);
		const c = /^\/captions\/([0-9a-f-]+)\/([0-9a-f-]+)\.([a-z]+)$/.exec(url.pathname);
		if (req.method === 'GET' && c) {
			const capture = {
				origin: 'storage',
				jobId: c[2],
				format: c[3],
				authorization: record.authorization,
				at: Date.now(),
			};
			ledger.captionDownloads.push(capture);
			const job = workspaces.get(c[1])?.jobs.get(c[2]);
			if (!job || url.searchParams.get('sig') !== ctx.sign(`captions:${c[1]}:${c[2]}`))
				return deny(403, 'signature_mismatch', 'The captions link is not valid.');
			try {
				return sendCaptions(res, job, c[3], capture);
			} catch (err) {
				return sendError(res, err);
			}
		}
		deny(404, 'not_found', 'Not found.');
	};
}

module.exports = { createStorage };
