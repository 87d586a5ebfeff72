// Workflows the e2e suites build (beside the examples users import).
import { tempJson } from './instance';

const node = (
	id: string,
	name: string,
	type: string,
	typeVersion: number,
	parameters: object,
	x: number,
	extra: object = {},
) => ({ id: `${id}-${name}`, name, type, typeVersion, parameters, position: [x, 0], ...extra });

/** Webhook (POST /webhook/<hook>) → n media URLs, one item each → Job → Create (On Webhook unless `wait` says) → No Operation. */
export function batchWaitWorkflow(
	id: string,
	hook: string,
	urls: string[],
	timeout: number,
	credentialId: string,
	settings: object = {},
	wait: object = { waitForCompletion: 'webhook' },
): string {
	return tempJson(`${id}.json`, {
		id,
		name: `Batch wait: ${id}`,
		versionId: `${id}-v1`,
		active: false,
		settings: { executionOrder: 'v1', ...settings },
		nodes: [
			node(
				id,
				'Request',
				'n8n-nodes-base.webhook',
				2,
				{ httpMethod: 'POST', path: hook, responseMode: 'onReceived', options: {} },
				0,
				{ webhookId: `${id}-hook` },
			),
			node(
				id,
				'Media',
				'n8n-nodes-base.set',
				3.4,
				{ mode: 'raw', jsonOutput: JSON.stringify({ urls }) },
				200,
			),
			node(id, 'Each', 'n8n-nodes-base.splitOut', 1, { fieldToSplitOut: 'urls' }, 400),
			node(
				id,
				'Order',
				'n8n-nodes-captioning.captioning',
				1,
				{
					resource: 'job',
					operation: 'create',
					source: 'url',
					mediaUrl: '={{ $json.urls }}',
					...wait,
					timeout,
				},
				600,
				{
					credentials: { captioningApi: { id: credentialId, name: credentialId } },
				},
			),
			node(id, 'Next', 'n8n-nodes-base.noOp', 1, {}, 800),
		],
		connections: {
			Request: { main: [[{ node: 'Media', type: 'main', index: 0 }]] },
			Media: { main: [[{ node: 'Each', type: 'main', index: 0 }]] },
			Each: { main: [[{ node: 'Order', type: 'main', index: 0 }]] },
			Order: { main: [[{ node: 'Next', type: 'main', index: 0 }]] },
		},
	});
}
