'use strict';
// What tests, the bench and the demo hold of a running sandbox: its addresses and keys, the ledger,
// and the levers (faults, limits, the job clock, where captions live, webhook deliveries, latency).
const { dollars } = require('./state');

function controlOf(ctx, servers) {
	return {
		baseUrl: ctx.baseUrl,
		storageOrigin: ctx.storageOrigin,
		keys: ctx.keyNames,
		ledger: ctx.ledger,
		limits: ctx.limits,
		workspaces: [...ctx.workspaces.values()].map((w) => ({
			id: w.id,
			name: w.name,
			billing: w.billing.mode,
		})),
		injectFault: ctx.faults.injectFault,
		setRandomFaults: ctx.faults.setRandomFaults,
		clearFaults: ctx.faults.clearFaults,
		setRateLimits: ctx.faults.setRateLimits,
		setTiming(t) {
			ctx.timing = t;
		},
		/** Every API and storage request waits this long before it is handled (0: none). */
		setLatency(ms) {
			ctx.latencyMs = ms;
		},
		/** The most requests that were under way at once since the ledger was reset. */
		maxInFlight: () => servers.maxInFlight(),
		/**
		 * New jobs are created at this instant (an ISO time; null: now), as a service whose clock is
		 * coarse; meanwhile the job list orders jobs created at one instant by id.
		 */
		setCreationTime(iso) {
			ctx.creationTime = iso;
		},
		setCaptionsOn(where) {
			ctx.captionsOn = where;
		},
		setWebhook(config) {
			Object.assign(ctx.deliveries.webhook, config);
		},
		/**
		 * Keeps a job out of the API's answers (list and read) until `showJob`, as a service whose
		 * writes become visible out of creation order: the job list then shows newer jobs without it.
		 */
		hideJob(id) {
			ctx.jobs.findJob(id).job.hidden = true;
		},
		showJob(id) {
			ctx.jobs.findJob(id).job.hidden = false;
		},
		/**
		 * The service forgets every Idempotency-Key it kept (the interface does not say for how long
		 * it keeps them): a repeat with a key is then a new order, unless the client finds it first.
		 */
		forgetIdempotencyKeys() {
			for (const ws of ctx.workspaces.values()) ws.idempotency.clear();
		},
		/** A new key of a workspace (`{name, access: 'full' | 'read_only', workspace: index}`): its secret, also in `keys[name]`. */
		addKey: ctx.addKey,
		/** Revokes a key (by its secret): its requests are answered 401 from now on. */
		revokeKey(secret) {
			ctx.keys.get(secret).revoked = true;
		},
		completeJob: ctx.jobs.completeJob,
		cancelJob: ctx.jobs.cancelJob,
		/**
		 * History: `count` jobs of the first workspace that finished long ago (completed), made
		 * directly, oldest first, before any job ordered later. Not in the ledger: no request made them.
		 * Options: `status` ('queued' for jobs still open), `metadata`, `workspace` (an index), `withinMs`
		 * (created evenly over that long before now; default a second apart from 30 days ago).
		 */
		seedHistory: ctx.jobs.seedHistory,
		startJob: ctx.jobs.startJob,
		/** The job as the API shows it, whatever the workspace. */
		job: (id) => ctx.jobs.publicJob(ctx.jobs.findJob(id).job),
		balance: (workspaceIndex = 0) =>
			dollars([...ctx.workspaces.values()][workspaceIndex].billing.balanceCents),
		/** Resolves when every webhook delivery and media fetch under way, and every retry scheduled, has ended. */
		settleDeliveries: ctx.deliveries.settle,
		resetLedger() {
			for (const k of Object.keys(ctx.ledger)) ctx.ledger[k].length = 0;
			servers.resetMaxInFlight();
		},
		async close() {
			ctx.closed = true;
			for (const t of ctx.timers) clearTimeout(t);
			ctx.timers.clear();
			await servers.close();
			await ctx.deliveries.close();
		},
	};
}

module.exports = { controlOf };
