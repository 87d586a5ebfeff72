// What the package reads of n8n beyond its public node interface, all of it here, with the
// real-n8n test that fails when n8n changes it (npm run test:e2e):
// - a request n8n's own policy refused (2.x's SSRF protection marks its refusals non-retryable):
//   test/e2e/networkFaults.test.ts. Without the mark the behaviour is still right: such a refusal
//   is then retried as a network failure, with the same Idempotency-Key, and fails with n8n's words.

/** n8n 2.x's mark on what its own policy refused to send (`@n8n/backend-network`). */
const REFUSED_BY_N8N = Symbol.for('n8n.backend-network.non-retryable-error');

/** Whether n8n refused to send the request (the mark, on the error or one it wraps). */
export function refusedByN8n(cause: unknown): boolean {
	for (let level = cause, depth = 0; level && typeof level === 'object' && depth < 6; depth++) {
		if ((level as Record<symbol, unknown>)[REFUSED_BY_N8N] === true) return true;
		level = (level as { cause?: unknown }).cause;
	}
	return false;
}
