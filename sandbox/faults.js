'use strict';
// Limits and faults: the service's rate limits (reads per key, writes per workspace: 429 with
// Retry-After) and the faults tests inject (statuses, resets, lost responses, redirects).
const { ApiError, sendError } = require('./http');

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

function createFaults(ctx) {
	let faults = [];
	let randomFaults = null;
	let rng = mulberry32(ctx.options.seed ?? 42);

	return {
		/** 429 when the key's reads or the workspace's writes are over their limit. */
		rateLimit(key, write) {
			const wait = write ? key.workspace.writeLimiter.take() : key.readLimiter.take();
			if (wait > 0) {
				const retryAfter = Math.max(1, Math.ceil(wait));
				throw new ApiError(
					429,
					'rate_limited',
					write
						? 'The write limit of this workspace was exceeded.'
						: 'The read limit of this API key was exceeded.',
					'',
					{ 'retry-after': String(retryAfter) },
				);
			}
		},

		/** The fault queued for this route, or drawn at random, if any. */
		takeFault(route) {
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
			if (
				randomFaults &&
				(!randomFaults.match || randomFaults.match === route) &&
				rng() < randomFaults.rate
			) {
				return { ...randomFaults.kinds[Math.floor(rng() * randomFaults.kinds.length)] };
			}
			return null;
		},

		applyFault(fault, res) {
			if (fault.kind === 'reset' || fault.kind === 'lose-response') {
				res.socket.destroy();
				return;
			}
			if (fault.kind === 'redirect') {
				res.writeHead(fault.status ?? 302, { location: fault.location }).end();
				return;
			}
			const headers =
				fault.retryAfter === undefined ? {} : { 'retry-after': String(fault.retryAfter) };
			const code =
				fault.code ??
				(fault.status === 503
					? 'temporarily_unavailable'
					: fault.status === 429
						? 'rate_limited'
						: 'internal_error');
			const message =
				fault.message ??
				(fault.status === 503
					? 'Job submission is busy; retry after 5 seconds.'
					: 'Injected fault.');
			sendError(res, new ApiError(fault.status, code, message, fault.param ?? ''), headers);
		},

		/** Queue faults for a route ('POST /jobs', 'GET /jobs/{id}', 'PUT /uploads', ...): {kind: 'status'|'reset'|'lose-response'|'fail-after'|'redirect', status, code, message, param, retryAfter, times, location}. */
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
			for (const k of ctx.keys.values()) k.readLimiter = new RateLimiter(readPerSecond);
			for (const w of ctx.workspaces.values()) w.writeLimiter = new RateLimiter(writePerSecond);
		},
	};
}

module.exports = { RateLimiter, createFaults };
