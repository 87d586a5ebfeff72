// An order n8n refused to send leaves no mark: n8n's SSRF protection (2.x) on, as an administrator
// sets it, with the service's address allowed and another loopback address blocked. The first run
// points its credential at the blocked address; once the Base URL is fixed, the next run orders.
process.env.N8N_SSRF_PROTECTION_ENABLED = 'true';
process.env.N8N_SSRF_ALLOWED_IP_RANGES = '127.0.0.1/32';

import type { Sandbox } from '../helpers/sandbox';
import { createSandbox } from '../helpers/sandbox';
import { MEDIA, runCaptioning } from '../helpers/captioning';

let sb: Sandbox;
beforeAll(async () => {
	sb = await createSandbox({ timing: null });
});
afterAll(async () => await sb.close());

test("an order n8n's SSRF policy refused: the error says nothing reached the service, and the next run orders it (one job, one charge)", async () => {
	const order = {
		resource: 'job',
		operation: 'create',
		source: 'url',
		mediaUrl: `${MEDIA}/refused-by-n8n.mp4`,
	};
	const workflowId = 'not-sent';
	const blocked = sb.baseUrl.replace('127.0.0.1', '127.0.0.2');
	const refused = await runCaptioning(sb, order, { workflowId, mode: 'webhook', baseUrl: blocked });
	expect(refused.failure?.message).toMatch(
		/^n8n did not send the request to the captioning service/,
	);
	expect(refused.failure?.description).toMatch(/Nothing reached the service\.$/);
	expect(refused.failure?.description).not.toMatch(/may exist and be charged/);
	expect(sb.ledger.requests).toHaveLength(0);
	const ordered = await runCaptioning(sb, order, { workflowId, mode: 'webhook' });
	expect(ordered.failure).toBeUndefined();
	expect(ordered.items[0].json).toMatchObject({ object: 'job', idempotent_replayed: false });
	expect(sb.ledger.requests.map((r) => `${r.route} ${r.status}`)).toEqual(['POST /jobs 201']);
	expect(sb.ledger.charges).toHaveLength(1);
});
