'use strict';
// A local simulator of the captioning API v1 (../shared/captioning-api-v1.md plus DESIGN.md's assumptions).
// Two origins, as in production: the API at {base_url} and a storage host for presigned PUTs and caption files.
const http = require('node:http');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { pipeline } = require('node:stream/promises');
const { Writable } = require('node:stream');
const { Agent, request: undiciRequest } = require('undici');
const { validateCreateJob, validateCreateUpload, validateIdempotencyKey, UUID } = require('./validate');
const { render, FORMATS, CONTENT_TYPES } = require('./captions');

const MAX_UPLOAD_BYTES = 5242880000;
const MAX_JSON_BODY = 64 * 1024;
const CANCELLATION_MESSAGES = {
	unsupported_language: 'The spoken language is not supported.',
	unsupported_media: 'The media format is not supported.',
	unusable_media: 'The media has no usable audio.',
	media_unavailable: 'The media could not be downloaded.',
	deleted: 'The job was deleted.',
	not_started: 'The job was cancelled before it started.',
};

const DEFAULT_LIMITS = {
	titleMax: 300,
	glossaryMax: 200,
	glossaryTermMax: 100,
	metadataKeysMax: 20,
	metadataKeyMax: 40,
	metadataValueMax: 500,
	mediaSecondsMax: 12 * 3600,
};

const cents = (s) => Math.round(Number(s) * 100);
const dollars = (c) => (c / 100).toFixed(2);
const randomId = (prefix, bytes = 12) => prefix + crypto.randomBytes(bytes).toString('hex');

class ApiError extends Error {
	constructor(status, code, message, param = '', headers = {}) {
		super(message);
		Object.assign(this, { status, code, param, headers });
	}
}

/** Token bucket: capacity = rate (one second of burst), refilled continuously. */
class RateLimiter {
	constructor(perSecond) {
		this.rate = perSecond;
		this.tokens = perSecond;
		this.at = Date.now();
	}
	/** @returns 0 when allowed, else seconds to wait */
	take() {
		if (!Number.isFinite(this.rate)) return 0;
		const now = Date.now();
		this.tokens = Math.min(this.rate, this.tokens + ((now - this.at) / 1000) * this.rate);
		this.at = now;
		if (this.tokens >= 1) {
			this.tokens -= 1;
			return 0;
		}
		return (1 - this.tokens) / this.rate;
	}
}

/** Whether a URL points at this machine (127.0.0.0/8, ::1, localhost). */
function isLoopback(url) {
	try {
		const host = new URL(url).hostname;
		return host === 'localhost' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
	} catch {
		return false;
	}
}

function defaultWorkspaces() {
	return [
		{
			id: '5b0e8f7e-3c57-4a51-9d3e-0c1f4a2b6d01',
			name: 'Sandbox Studio',
			billing: { mode: 'prepaid', balance: '1000.00', rate_per_minute: '0.25' },
			keys: [
				{ name: 'full', access: 'full', secret: 'sk_sandbox_full_7f3a9c2e5b8d1f4a' },
				{ name: 'readOnly', access: 'read_only', secret: 'sk_sandbox_read_2c6e9a1f4b7d3e8c' },
				{ name: 'revoked', access: 'full', secret: 'sk_sandbox_revoked_9d1b4e7a2f5c8e3b', revoked: true },
			],
		},
		{
			id: '8c2d4e6f-1a3b-4c5d-8e7f-9a0b1c2d3e02',
			name: 'Other Workspace',
			billing: { mode: 'invoiced', balance: null, rate_per_minute: '0.25' },
			keys: [{ name: 'otherWorkspace', access: 'full', secret: 'sk_sandbox_other_4a8c2e6b1d9f3a7e' }],
		},
		{
			id: '3e4f5a6b-7c8d-4e9f-a0b1-c2d3e4f5a603',
			name: 'Empty Wallet',
			billing: { mode: 'prepaid', balance: '0.00', rate_per_minute: '0.25' },
			keys: [{ name: 'noBalance', access: 'full', secret: 'sk_sandbox_nobalance_6e1a5c9f3b7d2e4a' }],
		},
	];
}

/**
 * Starts the sandbox. Options:
 *  port, storagePort: fixed ports (default: free ports), host (default 127.0.0.1)
 *  timing: {queuedMs, processingMs} or null for manual control (completeJob/cancelJob)
 *  rateLimits: {readPerSecond, writePerSecond}
 *  captionsOn: 'api' (same origin, needs the key) or 'storage' (another host, signed links)
 *  webhook: {attempts, duplicate, ca, rejectUnauthorized}
 *  limits: workspace limits (DEFAULT_LIMITS)
 *  uploadDir: also write uploaded bytes to this folder
 *  seed: for random fault injection
 */
async function createSandbox(options = {}) {
	const host = options.host ?? '127.0.0.1';
	const signingSecret = crypto.randomBytes(32);
	const limits = { ...DEFAULT_LIMITS, ...options.limits };
	let timing = options.timing === undefined ? { queuedMs: 100, processingMs: 400 } : options.timing;
	let captionsOn = options.captionsOn ?? 'api';
	const webhook = { attempts: 3, duplicate: false, rejectUnauthorized: true, ...options.webhook };
	const webhookAgent = new Agent({
		connect: { rejectUnauthorized: webhook.rejectUnauthorized, ca: webhook.ca },
		keepAliveTimeout: 1000,
	});

	const workspaces = new Map();
	const keys = new Map();
	const keyNames = {};
	for (const ws of options.workspaces ?? defaultWorkspaces()) {
		const state = {
			...ws,
			billing: { ...ws.billing, balanceCents: ws.billing.balance === null ? null : cents(ws.billing.balance) },
			jobs: new Map(),
			uploads: new Map(),
			idempotency: new Map(),
			writeLimiter: new RateLimiter(options.rateLimits?.writePerSecond ?? Infinity),
		};
		workspaces.set(ws.id, state);
		for (const k of ws.keys) {
			const key = { ...k, id: crypto.randomUUID(), workspace: state, readLimiter: new RateLimiter(options.rateLimits?.readPerSecond ?? Infinity) };
			keys.set(k.secret, key);
			keyNames[k.name] = k.secret;
		}
	}

	const ledger = { requests: [], jobs: [], charges: [], refunds: [], uploads: [], deliveries: [], captionDownloads: [], storageRequests: [], mediaFetches: [] };
	const timers = new Set();
	let faults = [];
	let randomFaults = null;
	let rng = mulberry32(options.seed ?? 42);
	// Requests under way at once (API and storage together), and the most seen: a client's concurrency.
	let inFlight = 0;
	let maxInFlight = 0;
	let latencyMs = 0;
	/** Counts a request while it is under way; waits latencyMs before it is handled. */
	async function underWay(res) {
		inFlight += 1;
		maxInFlight = Math.max(maxInFlight, inFlight);
		let counted = true;
		const done = () => {
			if (counted) inFlight -= 1;
			counted = false;
		};
		res.on('finish', done);
		res.on('close', done);
		if (latencyMs > 0) await new Promise((r) => setTimeout(r, latencyMs));
	}

	const later = (ms, fn) => {
		const t = setTimeout(() => {
			timers.delete(t);
			fn();
		}, ms);
		timers.add(t);
	};

	// --- helpers ---

	function send(res, status, body, headers = {}) {
		const payload = body === undefined ? '' : JSON.stringify(body);
		res.writeHead(status, {
			'content-type': 'application/json',
			'content-length': Buffer.byteLength(payload),
			'cache-control': 'no-store',
			...headers,
		});
		res.end(payload);
	}

	function sendError(res, err, headers = {}) {
		send(res, err.status, { error: { code: err.code, message: err.message, param: err.param ?? '' } }, { ...headers, ...err.headers });
	}

	async function readJson(req, { optional }) {
		const declared = req.headers['content-length'];
		if (declared !== undefined && Number(declared) > MAX_JSON_BODY) {
			req.resume();
			throw new ApiError(413, 'body_too_large', `The JSON body exceeds ${MAX_JSON_BODY} bytes.`);
		}
		const chunks = [];
		let size = 0;
		for await (const chunk of req) {
			size += chunk.length;
			if (size > MAX_JSON_BODY) {
				req.resume();
				throw new ApiError(413, 'body_too_large', `The JSON body exceeds ${MAX_JSON_BODY} bytes.`);
			}
			chunks.push(chunk);
		}
		if (size === 0) {
			if (optional) return {};
			throw new ApiError(400, 'invalid_request', 'The request body is empty.');
		}
		const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
		if (type !== 'application/json') {
			throw new ApiError(415, 'unsupported_content_type', 'Send the body as application/json.', 'Content-Type');
		}
		try {
			return JSON.parse(Buffer.concat(chunks).toString('utf8'));
		} catch {
			throw new ApiError(400, 'invalid_json', 'The request body is not valid JSON.');
		}
	}

	function authenticate(req) {
		const header = req.headers.authorization ?? '';
		const m = /^Bearer (.+)$/.exec(header);
		if (!m) throw new ApiError(401, 'missing_api_key', 'Send your API key as Authorization: Bearer <API_KEY>.');
		const key = keys.get(m[1]);
		if (!key) throw new ApiError(401, 'invalid_api_key', 'The API key is not valid.');
		if (key.revoked) throw new ApiError(401, 'api_key_revoked', 'The API key has been revoked.');
		return key;
	}

	function requireFull(key) {
		if (key.access !== 'full') {
			throw new ApiError(403, 'insufficient_permissions', 'This API key is read-only; uploading and ordering need a key with full access.');
		}
	}

	function rateLimit(key, write) {
		const wait = write ? key.workspace.writeLimiter.take() : key.readLimiter.take();
		if (wait > 0) {
			const retryAfter = Math.max(1, Math.ceil(wait));
			throw new ApiError(
				429,
				'rate_limited',
				write ? 'The write limit of this workspace was exceeded.' : 'The read limit of this API key was exceeded.',
				'',
				{ 'retry-after': String(retryAfter) },
			);
		}
	}

	function takeFault(route) {
		const i = faults.findIndex((f) => f.match === route && f.times > 0);
		if (i >= 0) {
			const f = faults[i];
			// `after`: that many requests of the route pass before the fault strikes.
			if (f.after > 0) {
				f.after -= 1;
				return null;
			}
			f.times -= 1;
			if (f.times === 0) faults.splice(i, 1);
			return f;
		}
		if (randomFaults && (!randomFaults.match || randomFaults.match === route) && rng() < randomFaults.rate) {
			return { ...randomFaults.kinds[Math.floor(rng() * randomFaults.kinds.length)] };
		}
		return null;
	}

	function applyFault(fault, res) {
		if (fault.kind === 'reset') {
			res.socket.destroy();
			return;
		}
		const headers = fault.retryAfter === undefined ? {} : { 'retry-after': String(fault.retryAfter) };
		const code = fault.code ?? (fault.status === 503 ? 'temporarily_unavailable' : fault.status === 429 ? 'rate_limited' : 'internal_error');
		const message = fault.message ?? (fault.status === 503 ? 'Job submission is busy; retry after 5 seconds.' : 'Injected fault.');
		sendError(res, new ApiError(fault.status, code, message, fault.param ?? ''), headers);
	}

	function canonical(value) {
		if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
		if (value && typeof value === 'object') {
			return `{${Object.keys(value)
				.sort()
				.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`)
				.join(',')}}`;
		}
		return JSON.stringify(value);
	}

	function mediaSeconds(url) {
		const d = new URL(url).searchParams.get('duration');
		return d === null ? 300 : Number(d);
	}

	function plannedCancellation(text) {
		const m = /cancel-([a-z_]+)/.exec(text ?? '');
		return m && CANCELLATION_MESSAGES[m[1]] ? m[1] : null;
	}

	function costCents(ws, seconds, options) {
		const minutes = Math.max(1, Math.ceil(seconds / 60));
		const r = options.redactions;
		const redacting = r.pii || r.names || r.organizations || r.terms.length > 0;
		const perMinute = cents(ws.billing.rate_per_minute) + (options.atmospherics ? 5 : 0) + (redacting ? 10 : 0);
		return minutes * perMinute;
	}

	function jobOptions(body) {
		const r = body.redactions ?? {};
		const redactions = {
			pii: r.pii ?? false,
			names: r.names ?? false,
			organizations: r.organizations ?? false,
			terms: r.terms ?? [],
			replacement: r.replacement ?? 'category_label',
		};
		if (r.custom_replacement !== undefined) redactions.custom_replacement = r.custom_replacement;
		return {
			style: body.style ?? 'clean',
			model: body.model ?? 'captioner-base',
			speaker_labels: body.speaker_labels ?? true,
			speaker_label_style: body.speaker_label_style ?? 'gt_name',
			atmospherics: body.atmospherics ?? true,
			profanity: body.profanity ?? 'as_spoken',
			redactions,
			glossary: body.glossary ?? [],
			webhook_url: body.webhook_url ?? null,
		};
	}

	function publicJob(job) {
		const now = Date.now();
		const out = { ...job.view };
		if (job.view.status === 'processing' && timing) {
			const elapsed = now - job.startedAt;
			out.progress = Math.min(99, Math.floor((elapsed / timing.processingMs) * 100));
		}
		return JSON.parse(JSON.stringify(out));
	}

	function captionLinks(ws, job) {
		const links = {};
		for (const f of FORMATS) {
			if (captionsOn === 'storage') {
				const sig = sign(`captions:${ws.id}:${job.view.id}`);
				links[f] = `${storageOrigin}/captions/${ws.id}/${job.view.id}.${f}?sig=${sig}`;
			} else {
				links[f] = `${baseUrl}/jobs/${job.view.id}/captions.${f}`;
			}
		}
		return links;
	}

	function startProcessing(ws, job) {
		if (job.view.status !== 'queued') return;
		job.startedAt = Date.now();
		Object.assign(job.view, {
			status: 'processing',
			progress: 0,
			language: 'en',
			eta: timing ? new Date(Date.now() + timing.processingMs).toISOString() : null,
		});
		if (timing) {
			later(timing.processingMs, () => (job.plannedCancellation ? cancelJob(job.view.id, job.plannedCancellation) : completeJob(job.view.id)));
		}
	}

	function findJob(id) {
		for (const ws of workspaces.values()) {
			const job = ws.jobs.get(id);
			if (job) return { ws, job };
		}
		throw new Error(`no job ${id}`);
	}

	function completeJob(id) {
		const { ws, job } = findJob(id);
		if (job.view.status === 'completed' || job.view.status === 'cancelled') return publicJob(job);
		// The media could not be fetched (see fetchMedia): the job cannot complete.
		if (job.plannedCancellation === 'media_unavailable') return cancelJob(id, 'media_unavailable');
		if (job.view.status === 'queued') startProcessing(ws, job);
		Object.assign(job.view, {
			status: 'completed',
			progress: 100,
			eta: null,
			captions: captionLinks(ws, job),
			completed_at: new Date().toISOString(),
		});
		emit(job, 'job.completed');
		return publicJob(job);
	}

	function cancelJob(id, reason) {
		const { ws, job } = findJob(id);
		if (!CANCELLATION_MESSAGES[reason]) throw new Error(`unknown cancellation reason ${reason}`);
		if (job.view.status === 'completed' || job.view.status === 'cancelled') return publicJob(job);
		// A cancelled job is refunded: cost is net of refunds.
		const charged = cents(job.view.cost.amount);
		if (ws.billing.balanceCents !== null) ws.billing.balanceCents += charged;
		ledger.refunds.push({ jobId: id, workspaceId: ws.id, amountCents: charged });
		Object.assign(job.view, {
			status: 'cancelled',
			progress: null,
			eta: null,
			cost: { amount: '0.00', currency: 'usd' },
			cancellation: { reason, message: CANCELLATION_MESSAGES[reason] },
			completed_at: new Date().toISOString(),
		});
		emit(job, 'job.cancelled');
		return publicJob(job);
	}

	function emit(job, type) {
		const url = job.view.options.webhook_url;
		if (!url) return;
		const event = { id: randomId('evt_'), object: 'event', type, created_at: new Date().toISOString(), data: publicJob(job) };
		deliver(url, event);
		if (webhook.duplicate) deliver(url, event);
	}

	/** POSTs an event, retrying non-2xx and network failures; redirects are not followed. */
	function deliver(url, event, attempt = 1) {
		const record = { eventId: event.id, type: event.type, jobId: event.data.id, url, attempt, status: null, error: null, at: Date.now() };
		ledger.deliveries.push(record);
		const body = JSON.stringify(event);
		const p = undiciRequest(url, {
			method: 'POST',
			body,
			headers: { 'content-type': 'application/json', 'user-agent': 'captioning-sandbox-webhooks/1' },
			dispatcher: webhookAgent,
			headersTimeout: 10000,
			bodyTimeout: 10000,
		})
			.then(async (res) => {
				record.ms = Date.now() - record.at;
				record.status = res.statusCode;
				record.body = await res.body.text();
				return res.statusCode >= 200 && res.statusCode < 300;
			})
			.catch((err) => {
				record.ms ??= Date.now() - record.at;
				record.error = err.code ?? err.message;
				return false;
			})
			.then((ok) => {
				pending.delete(p);
				if (!ok && attempt < webhook.attempts && !closed) {
					retriesScheduled += 1;
					later(200 * attempt, () => {
						retriesScheduled -= 1;
						deliver(url, event, attempt + 1);
					});
				}
			});
		pending.add(p);
	}
	const pending = new Set();
	let retriesScheduled = 0;

	/**
	 * Fetches a media_url as the service would when it takes the job: a GET of the first KiB (the size
	 * from Content-Range). Only addresses on this machine (a test's own server, e.g. an S3-compatible
	 * one holding the media): the examples' media.example.com is never fetched. Recorded in
	 * ledger.mediaFetches (the URL without its query, which may hold a signature); a failed fetch
	 * cancels the job as media_unavailable when it would complete.
	 */
	function fetchMedia(job) {
		const url = job.view.media.url;
		const record = { jobId: job.view.id, url: url.split('?')[0], status: null, bytes: 0, size: null, error: null, at: Date.now() };
		ledger.mediaFetches.push(record);
		const p = undiciRequest(url, { method: 'GET', headers: { range: 'bytes=0-1023' }, dispatcher: webhookAgent, headersTimeout: 10000, bodyTimeout: 10000 })
			.then(async (res) => {
				record.status = res.statusCode;
				const range = /\/(\d+)$/.exec(String(res.headers['content-range'] ?? ''));
				record.size = range ? Number(range[1]) : Number(res.headers['content-length'] ?? NaN) || null;
				record.bytes = (await res.body.arrayBuffer()).byteLength;
				if (res.statusCode !== 200 && res.statusCode !== 206) job.plannedCancellation = 'media_unavailable';
			})
			.catch((err) => {
				record.error = err.code ?? err.message;
				job.plannedCancellation = 'media_unavailable';
			})
			.finally(() => pending.delete(p));
		pending.add(p);
	}

	function sign(text) {
		return crypto.createHmac('sha256', signingSecret).update(text).digest('hex').slice(0, 32);
	}

	// --- API routes ---

	async function createJob(req, res, key, requestRecord) {
		requireFull(key);
		const ws = key.workspace;
		const idempotencyKey = req.headers['idempotency-key'];
		const body = await readJson(req, { optional: false });
		requestRecord.body = body;
		const keyError = validateIdempotencyKey(idempotencyKey);
		if (keyError) throw new ApiError(keyError.status, keyError.code, keyError.message, keyError.param);
		const problem = validateCreateJob(body, limits);
		if (problem) throw new ApiError(problem.status, problem.code, problem.message, problem.param);

		const fingerprint = canonical(body);
		if (idempotencyKey !== undefined) {
			const prior = ws.idempotency.get(idempotencyKey);
			if (prior) {
				if (prior.fingerprint !== fingerprint) {
					throw new ApiError(409, 'idempotency_conflict', 'This Idempotency-Key was used with a different request body.', 'Idempotency-Key');
				}
				return { status: 200, body: publicJob(ws.jobs.get(prior.jobId)), headers: { 'idempotent-replayed': 'true' } };
			}
		}

		let media;
		let cancellation;
		if (body.media_url !== undefined) {
			media = { type: 'url', url: body.media_url, upload_id: null, duration_seconds: mediaSeconds(body.media_url) };
			cancellation = plannedCancellation(body.media_url);
		} else {
			const upload = ws.uploads.get(body.upload_id);
			if (!upload) throw new ApiError(404, 'not_found', 'No upload with this id exists in this workspace.', 'upload_id');
			if (!upload.complete) throw new ApiError(400, 'upload_incomplete', 'The file of this upload has not been received yet; PUT it to upload_url first.', 'upload_id');
			media = { type: 'upload', url: null, upload_id: upload.id, duration_seconds: Math.max(1, Math.round(upload.receivedBytes / 1e6)) };
			cancellation = plannedCancellation(upload.filename);
		}
		if (!(media.duration_seconds <= limits.mediaSecondsMax)) {
			throw new ApiError(422, 'media_too_long', `The media is longer than the workspace limit of ${limits.mediaSecondsMax / 3600} hours.`, body.media_url !== undefined ? 'media_url' : 'upload_id');
		}
		const options = jobOptions(body);
		const amount = costCents(ws, media.duration_seconds, options);
		if (ws.billing.balanceCents !== null && ws.billing.balanceCents < amount) {
			throw new ApiError(402, 'insufficient_funds', `This order costs ${dollars(amount)} USD and the prepaid balance is ${dollars(ws.billing.balanceCents)} USD.`);
		}
		if (ws.billing.balanceCents !== null) ws.billing.balanceCents -= amount;
		const id = crypto.randomUUID();
		const job = {
			workspaceId: ws.id,
			plannedCancellation: cancellation,
			view: {
				id,
				object: 'job',
				status: 'queued',
				progress: null,
				eta: null,
				title: body.title ?? id,
				media,
				language: null,
				options,
				cost: { amount: dollars(amount), currency: 'usd' },
				cancellation: null,
				captions: null,
				metadata: body.metadata ?? {},
				created_at: new Date().toISOString(),
				completed_at: null,
			},
		};
		ws.jobs.set(id, job);
		ledger.jobs.push({ id, workspaceId: ws.id, body, idempotencyKey: idempotencyKey ?? null });
		ledger.charges.push({ jobId: id, workspaceId: ws.id, amountCents: amount });
		if (idempotencyKey !== undefined) ws.idempotency.set(idempotencyKey, { fingerprint, jobId: id });
		if (body.media_url !== undefined && isLoopback(body.media_url)) fetchMedia(job);
		if (timing) later(timing.queuedMs, () => startProcessing(ws, job));
		return { status: 201, body: publicJob(job) };
	}

	async function createUpload(req, res, key, requestRecord) {
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
		const sig = sign(`upload:${id}:${expiresAt}`);
		return {
			status: 201,
			body: {
				id,
				object: 'upload',
				upload_url: `${storageOrigin}/uploads/${id}?expires=${expiresAt}&sig=${sig}`,
				method: 'PUT',
				max_size_bytes: MAX_UPLOAD_BYTES,
				expires_at: new Date(expiresAt).toISOString(),
			},
		};
	}

	function getJob(key, id) {
		const job = UUID.test(id) ? key.workspace.jobs.get(id) : undefined;
		if (!job) throw new ApiError(404, 'not_found', 'No job with this id exists in this workspace.', 'id');
		return job;
	}

	function listJobs(key, query) {
		const limit = query.has('limit') ? Number(query.get('limit')) : 10;
		if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
			throw new ApiError(400, 'invalid_parameter', 'limit must be an integer from 1 to 100.', 'limit');
		}
		const status = query.get('status');
		if (status !== null && !['queued', 'processing', 'completed', 'cancelled'].includes(status)) {
			throw new ApiError(400, 'invalid_parameter', 'status must be one of: queued, processing, completed, cancelled.', 'status');
		}
		let jobs = [...key.workspace.jobs.values()].reverse();
		const after = query.get('starting_after');
		if (after !== null) {
			const i = jobs.findIndex((j) => j.view.id === after);
			if (i < 0) throw new ApiError(400, 'invalid_parameter', 'starting_after must be the id of a job in this workspace.', 'starting_after');
			jobs = jobs.slice(i + 1);
		}
		if (status !== null) jobs = jobs.filter((j) => j.view.status === status);
		return { object: 'list', data: jobs.slice(0, limit).map(publicJob), has_more: jobs.length > limit };
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

	function sendCaptions(res, job, format, record) {
		if (!FORMATS.includes(format) || job.view.status !== 'completed') {
			throw new ApiError(404, 'not_found', 'No captions of this format exist for this job.', 'format');
		}
		const data = render(job.view, format);
		record.bytes = data.length;
		res.writeHead(200, { 'content-type': CONTENT_TYPES[format], 'content-length': data.length, 'cache-control': 'no-store' });
		res.end(data);
	}

	async function api(req, res) {
		const requestId = randomId('req_', 8);
		const url = new URL(req.url, baseUrl);
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
			if (!url.pathname.startsWith('/v1/')) throw new ApiError(404, 'not_found', 'Unknown path; the base URL ends in /v1.');
			const p = record.path;
			let route;
			if (req.method === 'POST' && p === '/jobs') route = 'POST /jobs';
			else if (req.method === 'POST' && p === '/uploads') route = 'POST /uploads';
			else if (req.method === 'GET' && p === '/jobs') route = 'GET /jobs';
			else if (req.method === 'GET' && p === '/account') route = 'GET /account';
			else if (req.method === 'GET' && /^\/jobs\/[^/]+\/captions\.[a-z]+$/.test(p)) route = 'GET /jobs/{id}/captions';
			else if (req.method === 'GET' && /^\/jobs\/[^/]+$/.test(p)) route = 'GET /jobs/{id}';
			else throw new ApiError(404, 'not_found', `No endpoint ${req.method} ${p}.`);
			record.route = route;

			const key = authenticate(req);
			record.keyName = key.name;
			const fault = takeFault(route);
			if (fault && fault.kind !== 'lose-response') {
				record.fault = fault.kind === 'reset' ? 'reset' : fault.status;
				req.resume();
				return applyFault(fault, res);
			}
			rateLimit(key, req.method === 'POST');

			let result;
			if (route === 'POST /jobs') result = await createJob(req, res, key, record);
			else if (route === 'POST /uploads') result = await createUpload(req, res, key, record);
			else if (route === 'GET /jobs') result = { status: 200, body: listJobs(key, url.searchParams) };
			else if (route === 'GET /account') result = { status: 200, body: account(key) };
			else if (route === 'GET /jobs/{id}') result = { status: 200, body: publicJob(getJob(key, p.split('/')[2])) };
			else {
				const [, , id, file] = p.split('/');
				const capture = { origin: 'api', jobId: id, format: file.split('.')[1], authorization: true, at: Date.now() };
				ledger.captionDownloads.push(capture);
				return sendCaptions(res, getJob(key, id), capture.format, capture);
			}
			if (fault && fault.kind === 'lose-response') {
				record.fault = 'lose-response';
				return res.socket.destroy();
			}
			send(res, result.status, result.body, { ...headers, ...result.headers });
		} catch (err) {
			if (!(err instanceof ApiError)) {
				console.error('[sandbox] internal error', err);
				err = new ApiError(500, 'internal_error', 'Internal error.');
			}
			req.resume();
			if (!res.headersSent) sendError(res, err, headers);
		}
	}

	// --- storage origin: presigned PUT and caption files ---

	async function storage(req, res) {
		const url = new URL(req.url, storageOrigin);
		const record = { method: req.method, path: url.pathname, authorization: req.headers.authorization !== undefined, status: null, at: Date.now() };
		ledger.storageRequests.push(record);
		res.on('finish', () => (record.status = res.statusCode));
		const deny = (status, code, message) => {
			req.resume();
			send(res, status, { error: { code, message, param: '' } });
		};
		const m = /^\/uploads\/([0-9a-f-]+)$/.exec(url.pathname);
		if (req.method === 'PUT' && m) {
			const upload = [...workspaces.values()].map((w) => w.uploads.get(m[1])).find(Boolean);
			const expires = Number(url.searchParams.get('expires'));
			if (!upload || url.searchParams.get('sig') !== sign(`upload:${m[1]}:${expires}`)) return deny(403, 'signature_mismatch', 'The upload URL is not valid.');
			upload.puts += 1;
			const fault = takeFault('PUT /uploads');
			if (fault && fault.kind === 'redirect') {
				req.resume();
				res.writeHead(307, { location: fault.location }).end();
				return;
			}
			if (fault) {
				req.resume();
				return applyFault(fault, res);
			}
			if (req.headers.authorization !== undefined) {
				upload.authorizationSeen = true;
				return deny(400, 'invalid_argument', 'Only one auth mechanism allowed: the URL is presigned, send no Authorization header.');
			}
			if (Date.now() > expires) return deny(403, 'request_expired', 'The upload URL has expired; create a new upload.');
			const length = req.headers['content-length'];
			if (length === undefined) return deny(411, 'missing_content_length', 'Send a Content-Length header.');
			upload.contentLengthSent = Number(length);
			if (Number(length) > MAX_UPLOAD_BYTES) return deny(413, 'entity_too_large', 'The file exceeds 5242880000 bytes.');
			const hash = crypto.createHash('sha256');
			let received = 0;
			const count = async function* (source) {
				for await (const chunk of source) {
					received += chunk.length;
					hash.update(chunk);
					yield chunk;
				}
			};
			const sink = options.uploadDir
				? fs.createWriteStream(path.join(options.uploadDir, upload.id))
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
			return;
		}
		const c = /^\/captions\/([0-9a-f-]+)\/([0-9a-f-]+)\.([a-z]+)$/.exec(url.pathname);
		if (req.method === 'GET' && c) {
			const capture = { origin: 'storage', jobId: c[2], format: c[3], authorization: record.authorization, at: Date.now() };
			ledger.captionDownloads.push(capture);
			const ws = workspaces.get(c[1]);
			const job = ws?.jobs.get(c[2]);
			if (!job || url.searchParams.get('sig') !== sign(`captions:${c[1]}:${c[2]}`)) return deny(403, 'signature_mismatch', 'The captions link is not valid.');
			try {
				return sendCaptions(res, job, c[3], capture);
			} catch (err) {
				return sendError(res, err);
			}
		}
		deny(404, 'not_found', 'Not found.');
	}

	const apiServer = http.createServer((req, res) => void underWay(res).then(() => api(req, res)));
	const storageServer = http.createServer((req, res) => void underWay(res).then(() => storage(req, res)));
	apiServer.requestTimeout = 0;
	storageServer.requestTimeout = 0;
	const listen = (server, port) =>
		new Promise((resolve, reject) => {
			server.once('error', reject);
			server.listen(port ?? 0, host, () => resolve(server.address().port));
		});
	const apiPort = await listen(apiServer, options.port);
	const storagePort = await listen(storageServer, options.storagePort);
	const baseUrl = `http://${host}:${apiPort}/v1`;
	const storageOrigin = `http://${host}:${storagePort}`;
	let closed = false;

	return {
		baseUrl,
		storageOrigin,
		keys: keyNames,
		ledger,
		limits,
		workspaces: [...workspaces.values()].map((w) => ({ id: w.id, name: w.name, billing: w.billing.mode })),
		/** Queue faults for a route ('POST /jobs', 'GET /jobs/{id}', 'PUT /uploads', ...): {kind: 'status'|'reset'|'lose-response'|'redirect', status, code, message, param, retryAfter, times, location}. */
		injectFault(route, fault) {
			faults.push({ match: route, times: 1, kind: 'status', ...fault });
		},
		/** Random faults: {rate, kinds: [{kind, status, retryAfter}], match?}; null turns them off. */
		setRandomFaults(config, seed = 42) {
			randomFaults = config;
			rng = mulberry32(seed);
		},
		clearFaults() {
			faults = [];
			randomFaults = null;
		},
		setRateLimits({ readPerSecond = Infinity, writePerSecond = Infinity }) {
			for (const k of keys.values()) k.readLimiter = new RateLimiter(readPerSecond);
			for (const w of workspaces.values()) w.writeLimiter = new RateLimiter(writePerSecond);
		},
		setTiming(t) {
			timing = t;
		},
		/** Every API and storage request waits this long before it is handled (0: none). */
		setLatency(ms) {
			latencyMs = ms;
		},
		/** The most requests that were under way at once since the ledger was reset. */
		maxInFlight: () => maxInFlight,
		setCaptionsOn(where) {
			captionsOn = where;
		},
		setWebhook(config) {
			Object.assign(webhook, config);
		},
		completeJob,
		cancelJob,
		/**
		 * History: `count` jobs of the first workspace that finished long ago (completed), made
		 * directly, oldest first, before any job ordered later. Not in the ledger: no request made them.
		 */
		seedHistory(count) {
			const ws = [...workspaces.values()][0];
			const start = Date.now() - 30 * 86400 * 1000;
			for (let n = 0; n < count; n++) {
				const id = crypto.randomUUID();
				const created = new Date(start + n * 1000).toISOString();
				const job = {
					workspaceId: ws.id,
					view: {
						id,
						object: 'job',
						status: 'completed',
						progress: 100,
						eta: null,
						title: `Old job ${n}`,
						media: { type: 'url', url: `https://media.example.com/old/${n}.mp4`, upload_id: null, duration_seconds: 60 },
						language: 'en',
						options: jobOptions({}),
						cost: { amount: '0.30', currency: 'usd' },
						cancellation: null,
						captions: null,
						metadata: {},
						created_at: created,
						completed_at: new Date(start + n * 1000 + 600000).toISOString(),
					},
				};
				job.view.captions = captionLinks(ws, job);
				ws.jobs.set(id, job);
			}
		},
		startJob: (id) => {
			const { ws, job } = findJob(id);
			startProcessing(ws, job);
			return publicJob(job);
		},
		/** The job as the API shows it, whatever the workspace. */
		job: (id) => publicJob(findJob(id).job),
		balance: (workspaceIndex = 0) => dollars([...workspaces.values()][workspaceIndex].billing.balanceCents),
		/** Resolves when every webhook delivery and media fetch under way, and every retry scheduled, has ended. */
		async settleDeliveries() {
			while (pending.size > 0 || retriesScheduled > 0) await new Promise((r) => setTimeout(r, 20));
		},
		resetLedger() {
			for (const k of Object.keys(ledger)) ledger[k].length = 0;
			maxInFlight = inFlight;
		},
		async close() {
			closed = true;
			for (const t of timers) clearTimeout(t);
			timers.clear();
			await Promise.allSettled([...pending]);
			apiServer.closeAllConnections();
			storageServer.closeAllConnections();
			await Promise.all([new Promise((r) => apiServer.close(r)), new Promise((r) => storageServer.close(r))]);
			await webhookAgent.close();
		},
	};
}

/** Small seeded PRNG so fault injection is repeatable. */
function mulberry32(seed) {
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

module.exports = { createSandbox, MAX_UPLOAD_BYTES, CANCELLATION_MESSAGES };
