'use strict';
// What the sandbox holds: workspaces with their keys, jobs, uploads and idempotency keys; the ledger
// tests read; the timers it set; and its signing secret (presigned URLs, caption links).
const crypto = require('node:crypto');

const { ApiError } = require('./http');
const { RateLimiter } = require('./faults');

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

function defaultWorkspaces() {
	return [
		{
			id: '5b0e8f7e-3c57-4a51-9d3e-0c1f4a2b6d01',
			name: 'Sandbox Studio',
			billing: { mode: 'prepaid', balance: '1000.00', rate_per_minute: '0.25' },
			keys: [
				{ name: 'full', access: 'full', secret: 'sk_sandbox_full_7f3a9c2e5b8d1f4a' },
				{ name: 'readOnly', access: 'read_only', secret: 'sk_sandbox_read_2c6e9a1f4b7d3e8c' },
				{
					name: 'revoked',
					access: 'full',
					secret: 'sk_sandbox_revoked_9d1b4e7a2f5c8e3b',
					revoked: true,
				},
			],
		},
		{
			id: '8c2d4e6f-1a3b-4c5d-8e7f-9a0b1c2d3e02',
			name: 'Other Workspace',
			billing: { mode: 'invoiced', balance: null, rate_per_minute: '0.25' },
			keys: [
				{ name: 'otherWorkspace', access: 'full', secret: 'sk_sandbox_other_4a8c2e6b1d9f3a7e' },
			],
		},
		{
			id: '3e4f5a6b-7c8d-4e9f-a0b1-c2d3e4f5a603',
			name: 'Empty Wallet',
			billing: { mode: 'prepaid', balance: '0.00', rate_per_minute: '0.25' },
			keys: [
				{ name: 'noBalance', access: 'full', secret: 'sk_sandbox_nobalance_6e1a5c9f3b7d2e4a' },
			],
		},
	];
}

/** The sandbox's state, and the settings tests change while it runs (timing, where captions live, latency). */
function createState(options) {
	const signingSecret = crypto.randomBytes(32);
	const workspaces = new Map();
	const keys = new Map();
	const keyNames = {};
	for (const ws of options.workspaces ?? defaultWorkspaces()) {
		const state = {
			...ws,
			billing: {
				...ws.billing,
				balanceCents: ws.billing.balance === null ? null : cents(ws.billing.balance),
			},
			jobs: new Map(),
			uploads: new Map(),
			idempotency: new Map(),
			writeLimiter: new RateLimiter(options.rateLimits?.writePerSecond ?? Infinity),
		};
		workspaces.set(ws.id, state);
		for (const k of ws.keys) {
			const key = {
				...k,
				id: crypto.randomUUID(),
				workspace: state,
				readLimiter: new RateLimiter(options.rateLimits?.readPerSecond ?? Infinity),
			};
			keys.set(k.secret, key);
			keyNames[k.name] = k.secret;
		}
	}
	/** A key of a workspace (by index), as the dashboard makes one; its secret. */
	function addKey({ name, access = 'full', workspace = 0 }) {
		const ws = [...workspaces.values()][workspace];
		const secret = randomId(`sk_sandbox_${name}_`, 8);
		keys.set(secret, {
			name,
			access,
			secret,
			id: crypto.randomUUID(),
			workspace: ws,
			readLimiter: new RateLimiter(options.rateLimits?.readPerSecond ?? Infinity),
		});
		keyNames[name] = secret;
		return secret;
	}
	const timers = new Set();
	const ctx = {
		addKey,
		options,
		limits: { ...DEFAULT_LIMITS, ...options.limits },
		timing: options.timing === undefined ? { queuedMs: 100, processingMs: 400 } : options.timing,
		captionsOn: options.captionsOn ?? 'api',
		latencyMs: 0,
		closed: false,
		workspaces,
		keys,
		keyNames,
		ledger: {
			requests: [],
			jobs: [],
			charges: [],
			refunds: [],
			uploads: [],
			deliveries: [],
			captionDownloads: [],
			storageRequests: [],
			mediaFetches: [],
		},
		timers,
		/** Runs fn after ms, unless the sandbox closes first. */
		later(ms, fn) {
			const t = setTimeout(() => {
				timers.delete(t);
				fn();
			}, ms);
			timers.add(t);
		},
		sign: (text) =>
			crypto.createHmac('sha256', signingSecret).update(text).digest('hex').slice(0, 32),
		/** The key a request carries (401 without a valid one). */
		authenticate(req) {
			const header = req.headers.authorization ?? '';
			const m = /^Bearer (.+)$/.exec(header);
			if (!m)
				throw new ApiError(
					401,
					'missing_api_key',
					'Send your API key as Authorization: Bearer <API_KEY>.',
				);
			const key = keys.get(m[1]);
			if (!key) throw new ApiError(401, 'invalid_api_key', 'The API key is not valid.');
			if (key.revoked) throw new ApiError(401, 'api_key_revoked', 'The API key has been revoked.');
			return key;
		},
	};
	return ctx;
}

/** JSON with sorted keys: the same request body twice gives the same text (idempotency). */
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

module.exports = { createState, cents, dollars, randomId, canonical, DEFAULT_LIMITS };
