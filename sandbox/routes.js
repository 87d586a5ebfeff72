'use strict';
// The API's routes at {base_url}: uploads, jobs (create, read, list), captions on the API host,
// the account. Every request is recorded in the ledger (route, key, status) before it is handled.
const crypto = require('node:crypto');

const { ApiError, send, sendError, readJson } = require('./http');
const { render, FORMATS, CONTENT_TYPES } = require('./captions');
const { canonical, dollars, randomId } = require('./state');
const {
	validateCreateJob,
	validateCreateUpload,
	validateIdempotencyKey,
	UUID,
} = require('./validate');

const MAX_UPLOAD_BYTES = 5242880000;

function requireFull(key) {
	if (key.access !== 'full') {
		throw new ApiError(
			403,
			'insufficient_permissions',
			'This API key is read-only; uploading and ordering need a key with full access.',
		);
	}
}

/** The caption file of a completed job, recorded in the ledger as downloaded. */
function sendCaptions(res, job, format, record) {
	if (!FORMATS.includes(format) || job.view.status !== 'completed') {
		throw new ApiError(
			404,
			'not_found',
			'No captions of this format exist for this job.',
			'format',
		);
	}
	const data = render(job.view, format);
	record.bytes = data.length;
	res.writeHead(200, {
		'content-type': CONTENT_TYPES[format],
		'content-length': data.length,
		'cache-control': 'no-store',
	});
	res.end(data);
}

function routeOf(method, p) {
	if (method === 'POST' && p === '/jobs') return 'POST /jobs';
	if (method === 'POST' && p === '/uploads') return 'POST /uploads';
	if (method === 'GET' && p === '/jobs') return 'GET /jobs';
	if (method === 'GET' && p === '/account') return 'GET /account';
	if (method === 'GET' && /^\/jobs\/[^/]+\/captions\.[a-z]+$/.test(p))
		return 'GET /jobs/{id}/captions';
	if (method === 'GET' && /^\/jobs\/[^/]+$/.test(p)) return 'GET /jobs/{id}';
	return undefined;
}

function createRoutes(ctx) {
	const { ledger } = ctx;

	async function createJob(req, key, requestRecord) {
		requireFull(key);
		const ws = key.workspace;
		const idempotencyKey = req.headers['idempotency-key'];
		const body = await readJson(req, { optional: false });
		requestRecord.body = body;
		const keyError = validateIdempotencyKey(idempotencyKey);
		if (keyError)
			throw new ApiError(keyError.status, keyError.code, keyError.message, keyError.param);
		const problem = validateCreateJob(body, ctx.limits);
		if (problem) throw new ApiError(problem.status, problem.code, problem.message, problem.param);
		const fingerprint = canonical(body);
		if (idempotencyKey !== undefined) {
			const prior = ws.idempotency.get(idempotencyKey);
			if (prior) {
				if (prior.fingerprint !== fingerprint) {
					throw new ApiError(
						409,
						'idempotency_conflict',
						'This Idempotency-Key was used with a different request body.',
						'Idempotency-Key',
					);
				}
				return {
					status: 200,
					body: ctx.jobs.publicJob(ws.jobs.get(prior.jobId)),
					headers: { 'idempotent-replayed': 'true' },
				};
			}
		}
		const job = ctx.jobs.placeOrder(ws, body, idempotencyKey);
		if (idempotencyKey !== undefined)
			ws.idempotency.set(idempotencyKey, { fingerprint, jobId: job.view.id });
		return { status: 201, body: ctx.jobs.publicJob(job) };
	}

	async function createUpload(req, key, requestRecord) {
		requireFull(key);
		const body = await readJson(req, { optional: true });
		requestRecord.body = body;
		const problem = validateCreateUpload(body);
		if (problem) throw new ApiError(problem.status, problem.code, problem.message, problem.param);
		const id = crypto.randomUUID();
		const expiresAt = Date.now() + 3600 * 1000;
		const upload = {
			id,
			workspaceId: key.workspace.id,
			filename: body.filename ?? null,
			contentType: body.content_type ?? null,
			declaredBytes: body.size_bytes ?? null,
			expiresAt,
			receivedBytes: 0,
			sha256: null,
			complete: false,
			authorizationSeen: false,
			contentLengthSent: null,
			puts: 0,
		};
		key.workspace.uploads.set(id, upload);
		ledger.uploads.push(upload);
		const sig = ctx.sign(`upload:${id}:${expiresAt}`);
		return {
			status: 201,
			body: {
				id,
				object: 'upload',
				upload_url: `${ctx.storageOrigin}/uploads/${id}?expires=${expiresAt}&sig=${sig}`,
				method: 'PUT',
				max_size_bytes: MAX_UPLOAD_BYTES,
				expires_at: new Date(expiresAt).toISOString(),
			},
		};
	}

	function getJob(key, id) {
		const job = UUID.test(id) ? key.workspace.jobs.get(id) : undefined;
		if (!job || job.hidden)
			throw new ApiError(404, 'not_found', 'No job with this id exists in this workspace.', 'id');
		return job;
	}

	/**
	 * GET /jobs as shared/DESIGN.md assumes it: `limit`, `starting_after` and `status`, any other
	 * parameter refused (400 unknown_parameter). Extensions, each off unless its option is set:
	 * `listMetadataFilter` (metadata[<key>]=<value>), `listLagMs` (a job enters the list that long
	 * after its creation; it can be read by id at once).
	 */
	function listJobs(key, query) {
		for (const name of query.keys()) {
			const known =
				['limit', 'starting_after', 'status'].includes(name) ||
				(ctx.options.listMetadataFilter && /^metadata\[.+\]$/.test(name));
			if (!known)
				throw new ApiError(400, 'unknown_parameter', `unknown query parameter ${name}`, name);
		}
		const limit = query.has('limit') ? Number(query.get('limit')) : 10;
		if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
			throw new ApiError(
				400,
				'invalid_parameter',
				'limit must be an integer from 1 to 100.',
				'limit',
			);
		}
		const status = query.get('status');
		if (status !== null && !['queued', 'processing', 'completed', 'cancelled'].includes(status)) {
			throw new ApiError(
				400,
				'invalid_parameter',
				'status must be one of: queued, processing, completed, cancelled.',
				'status',
			);
		}
		// Newest first. The interface does not order jobs created at the same instant: the newest
		// order first, or (while tests fix the creation time) by id.
		const listedBefore = Date.now() - (ctx.options.listLagMs ?? 0);
		let jobs = [...key.workspace.jobs.values()]
			.filter((j) => !j.hidden && (j.createdMs ?? 0) <= listedBefore)
			.reverse();
		if (ctx.creationTime)
			jobs.sort(
				(a, b) =>
					b.view.created_at.localeCompare(a.view.created_at) || b.view.id.localeCompare(a.view.id),
			);
		const after = query.get('starting_after');
		if (after !== null) {
			const i = jobs.findIndex((j) => j.view.id === after);
			if (i < 0)
				throw new ApiError(
					400,
					'invalid_parameter',
					'starting_after must be the id of a job in this workspace.',
					'starting_after',
				);
			jobs = jobs.slice(i + 1);
		}
		if (status !== null) jobs = jobs.filter((j) => j.view.status === status);
		// listMetadataFilter: metadata[<key>]=<value>, only jobs whose metadata has that key with that value.
		for (const [name, value] of query) {
			const m = /^metadata\[(.+)\]$/.exec(name);
			if (m) jobs = jobs.filter((j) => j.view.metadata?.[m[1]] === value);
		}
		return {
			object: 'list',
			data: jobs.slice(0, limit).map(ctx.jobs.publicJob),
			has_more: jobs.length > limit,
		};
	}

	function account(key) {
		const ws = key.workspace;
		return {
			object: 'account',
			workspace: { id: ws.id, name: ws.name },
			key: { id: key.id, name: key.name, access: key.access },
			billing: {
				mode: ws.billing.mode,
				balance: ws.billing.balanceCents === null ? null : dollars(ws.billing.balanceCents),
				currency: 'usd',
				rate_per_minute: ws.billing.rate_per_minute,
			},
		};
	}

	/** Handles a request at the API's origin. */
	return async function api(req, res) {
		const requestId = randomId('req_', 8);
		const url = new URL(req.url, ctx.baseUrl);
		const record = {
			requestId,
			method: req.method,
			path: url.pathname.replace(/^\/v1/, ''),
			query: Object.fromEntries(url.searchParams),
			authorization: req.headers.authorization !== undefined,
			idempotencyKey: req.headers['idempotency-key'] ?? null,
			keyName: null,
			status: null,
			at: Date.now(),
		};
		ledger.requests.push(record);
		const headers = { 'request-id': requestId };
		res.on('finish', () => (record.status = res.statusCode));
		try {
			if (!url.pathname.startsWith('/v1/'))
				throw new ApiError(404, 'not_found', 'Unknown path; the base URL ends in /v1.');
			const p = record.path;
			const route = routeOf(req.method, p);
			if (!route) throw new ApiError(404, 'not_found', `No endpoint ${req.method} ${p}.`);
			record.route = route;

			const key = ctx.authenticate(req);
			record.keyName = key.name;
			const fault = ctx.faults.takeFault(route);
			const after = ['lose-response', 'fail-after'].includes(fault?.kind);
			if (fault) record.fault = /reset|lose/.test(fault.kind) ? fault.kind : fault.status;
			if (fault && !after) {
				req.resume();
				return ctx.faults.applyFault(fault, res);
			}
			ctx.faults.rateLimit(key, req.method === 'POST');

			let result;
			if (route === 'POST /jobs') result = await createJob(req, key, record);
			else if (route === 'POST /uploads') result = await createUpload(req, key, record);
			else if (route === 'GET /jobs')
				result = { status: 200, body: listJobs(key, url.searchParams) };
			else if (route === 'GET /account') result = { status: 200, body: account(key) };
			else if (route === 'GET /jobs/{id}')
				result = { status: 200, body: ctx.jobs.publicJob(getJob(key, p.split('/')[2])) };
			else {
				const [, , id, file] = p.split('/');
				const capture = {
					origin: 'api',
					jobId: id,
					format: file.split('.')[1],
					authorization: true,
					at: Date.now(),
				};
				ledger.captionDownloads.push(capture);
				return sendCaptions(res, getJob(key, id), capture.format, capture);
			}
			// Carried out, then the answer lost, or an error answered (a 500 after the job was made).
			if (after) return ctx.faults.applyFault(fault, res);
			send(res, result.status, result.body, { ...headers, ...result.headers });
		} catch (err) {
			if (!(err instanceof ApiError)) {
				console.error('[sandbox] internal error', err);
				err = new ApiError(500, 'internal_error', 'Internal error.');
			}
			req.resume();
			if (!res.headersSent) sendError(res, err, headers);
		}
	};
}

module.exports = { createRoutes, sendCaptions, MAX_UPLOAD_BYTES };
