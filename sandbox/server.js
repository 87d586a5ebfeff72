'use strict';
// A local simulator of the captioning API v1 (../shared/captioning-api-v1.md plus DESIGN.md's assumptions).
// Two origins, as in production: the API at {base_url} and a storage host for presigned PUTs and caption files.
// One module a job: state.js (workspaces, keys, ledger), lifecycle.js (orders and the job lifecycle),
// routes.js (the API), storage.js (the storage host), faults.js (rate limits, injected faults),
// deliveries.js (webhook events, media fetches), control.js (what tests hold), http.js.
const http = require('node:http');

const { createState } = require('./state');
const { createFaults } = require('./faults');
const { createJobs, CANCELLATION_MESSAGES } = require('./lifecycle');
const { createDeliveries } = require('./deliveries');
const { createRoutes, MAX_UPLOAD_BYTES } = require('./routes');
const { createStorage } = require('./storage');
const { controlOf } = require('./control');

/**
 * Starts the sandbox. Options:
 *  port, storagePort: fixed ports (default: free ports), host (default 127.0.0.1)
 *  timing: {queuedMs, processingMs} or null for manual control (completeJob/cancelJob)
 *  rateLimits: {readPerSecond, writePerSecond}
 *  captionsOn: 'api' (same origin, needs the key) or 'storage' (another host, signed links)
 *  webhook: {attempts, duplicate, leadMs, ca, rejectUnauthorized}
 *  limits: workspace limits (state.js DEFAULT_LIMITS)
 *  uploadDir: also write uploaded bytes to this folder
 *  seed: for random fault injection
 */
async function createSandbox(options = {}) {
	const host = options.host ?? '127.0.0.1';
	const ctx = createState(options);
	ctx.faults = createFaults(ctx);
	ctx.jobs = createJobs(ctx);
	ctx.deliveries = createDeliveries(ctx);
	const api = createRoutes(ctx);
	const storage = createStorage(ctx);

	// Requests under way at once (API and storage together), and the most seen: a client's concurrency.
	let inFlight = 0;
	let maxInFlight = 0;
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
		if (ctx.latencyMs > 0) await new Promise((r) => setTimeout(r, ctx.latencyMs));
	}

	const apiServer = http.createServer((req, res) => void underWay(res).then(() => api(req, res)));
	const storageServer = http.createServer(
		(req, res) => void underWay(res).then(() => storage(req, res)),
	);
	apiServer.requestTimeout = 0;
	storageServer.requestTimeout = 0;
	const listen = (server, port) =>
		new Promise((resolve, reject) => {
			server.once('error', reject);
			server.listen(port ?? 0, host, () => resolve(server.address().port));
		});
	ctx.baseUrl = `http://${host}:${await listen(apiServer, options.port)}/v1`;
	ctx.storageOrigin = `http://${host}:${await listen(storageServer, options.storagePort)}`;

	return controlOf(ctx, {
		maxInFlight: () => maxInFlight,
		resetMaxInFlight: () => (maxInFlight = inFlight),
		async close() {
			apiServer.closeAllConnections();
			storageServer.closeAllConnections();
			await Promise.all([
				new Promise((r) => apiServer.close(r)),
				new Promise((r) => storageServer.close(r)),
			]);
		},
	});
}

module.exports = { createSandbox, MAX_UPLOAD_BYTES, CANCELLATION_MESSAGES };
