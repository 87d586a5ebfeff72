// Typed access to the sandbox (plain JavaScript, a dev tool) for the tests.

// eslint-disable-next-line @typescript-eslint/no-require-imports
const server = require('../../sandbox/server') as {
	createSandbox: (options?: object) => Promise<Sandbox>;
};

export interface LedgerRequest {
	requestId: string;
	method: string;
	path: string;
	route?: string;
	query: Record<string, string>;
	authorization: boolean;
	idempotencyKey: string | null;
	keyName: string | null;
	status: number | null;
	body?: Record<string, unknown>;
	fault?: string | number;
	/** When the request arrived (ms). */
	at: number;
}

export interface Sandbox {
	baseUrl: string;
	storageOrigin: string;
	keys: Record<'full' | 'readOnly' | 'revoked' | 'otherWorkspace' | 'noBalance', string>;
	ledger: {
		requests: LedgerRequest[];
		jobs: Array<{
			id: string;
			workspaceId: string;
			body: Record<string, unknown>;
			idempotencyKey: string | null;
		}>;
		charges: Array<{ jobId: string; amountCents: number }>;
		refunds: Array<{ jobId: string; amountCents: number }>;
		uploads: Array<{
			id: string;
			filename: string | null;
			contentType: string | null;
			declaredBytes: number | null;
			receivedBytes: number;
			sha256: string | null;
			complete: boolean;
			authorizationSeen: boolean;
			contentLengthSent: number | null;
			puts: number;
		}>;
		/** The service's fetches of a media_url on this machine: the URL without its query, status, bytes read, size. */
		mediaFetches: Array<{
			jobId: string;
			url: string;
			status: number | null;
			bytes: number;
			size: number | null;
			error: string | null;
			at: number;
		}>;
		deliveries: Array<{
			eventId: string;
			type: string;
			jobId: string;
			url: string;
			attempt: number;
			status: number | null;
			error: string | null;
			at: number;
			/** Until the answer's headers (or the failure). */ ms?: number;
			/** The answer's body, as text. */
			body?: string;
		}>;
		captionDownloads: Array<{
			origin: string;
			jobId: string;
			format: string;
			authorization: boolean;
			at: number;
		}>;
		storageRequests: Array<{
			method: string;
			path: string;
			authorization: boolean;
			status: number | null;
		}>;
	};
	injectFault(
		route: string,
		fault: {
			kind?: string;
			status?: number;
			code?: string;
			message?: string;
			param?: string;
			retryAfter?: number;
			times?: number;
			after?: number;
			location?: string;
		},
	): void;
	setRandomFaults(
		config: {
			rate: number;
			kinds: Array<{ kind: string; status?: number; retryAfter?: number }>;
			match?: string;
		} | null,
		seed?: number,
	): void;
	clearFaults(): void;
	setRateLimits(limits: { readPerSecond?: number; writePerSecond?: number }): void;
	/** The workspace limits CreateJob is checked against (state.js DEFAULT_LIMITS), to change in place. */
	limits: Record<string, number>;
	setTiming(timing: { queuedMs: number; processingMs: number } | null): void;
	setLatency(ms: number): void;
	maxInFlight(): number;
	setCaptionsOn(where: 'api' | 'storage'): void;
	/** New jobs are created at this instant (null: now): jobs that share a creation time. */
	setCreationTime(iso: string | null): void;
	setWebhook(config: {
		/** Tries of a delivery that failed (default 1: the interface promises no redelivery). */
		attempts?: number;
		duplicate?: boolean;
		/** The event goes this long before reads show the job completed (default 0). */
		leadMs?: number;
		rejectUnauthorized?: boolean;
		ca?: Buffer;
	}): void;
	completeJob(id: string): Record<string, unknown>;
	seedHistory(
		count: number,
		options?: {
			status?: 'completed' | 'queued';
			metadata?: Record<string, string>;
			workspace?: number;
			/** Created evenly over that long before now (default: a second apart, 30 days ago). */
			withinMs?: number;
		},
	): void;
	/** A new key of a workspace (by index, default the first), as the dashboard makes one: its secret (also in `keys[name]`). */
	addKey(key: { name: string; access?: 'full' | 'read_only'; workspace?: number }): string;
	/** Revokes a key by its secret: answered 401 from now on. */
	revokeKey(secret: string): void;
	/** The service forgets every Idempotency-Key it kept. */
	forgetIdempotencyKeys(): void;
	/** Keeps a job out of the API's answers until showJob (a write that becomes visible late). */
	hideJob(id: string): void;
	showJob(id: string): void;
	cancelJob(id: string, reason: string): Record<string, unknown>;
	startJob(id: string): Record<string, unknown>;
	job(id: string): Record<string, unknown>;
	balance(workspaceIndex?: number): string;
	settleDeliveries(): Promise<void>;
	resetLedger(): void;
	close(): Promise<void>;
}

export const createSandbox = server.createSandbox;

/**
 * One sandbox for a test file: started before its tests, closed after them, and set back to a
 * quiet state (empty ledger, no faults or limits, manual job clock, captions on the API host)
 * before each test. `use` receives it once started.
 */
export function useSandbox(use: (sandbox: Sandbox) => void, options: object = {}): void {
	let sandbox: Sandbox;
	beforeAll(async () => {
		sandbox = await createSandbox({ timing: null, ...options });
		use(sandbox);
	});
	afterAll(async () => await sandbox.close());
	beforeEach(() => {
		sandbox.resetLedger();
		sandbox.clearFaults();
		sandbox.setRateLimits({});
		sandbox.setTiming(null);
		sandbox.setLatency(0);
		sandbox.setCaptionsOn('api');
		sandbox.setCreationTime(null);
	});
}
