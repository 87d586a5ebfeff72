// n8n's AI workflow builder (2.x) reads nodes' and parameters' builderHint. The hints must pass
// the check n8n 2.41.1 runs when it loads a package (no hint on a resource/operation/mode
// discriminator: the package would not load) and must lead to the Google Drive template's shape.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { INodeProperties, INodeTypeDescription } from 'n8n-workflow';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { validateNodeDescription } =
	require('n8n-core/dist/nodes-loader/validate-node-description') as {
		validateNodeDescription: (d: INodeTypeDescription) => void;
	};

import { Captioning } from '../../nodes/Captioning/Captioning.node';
import { CaptioningPollingTrigger } from '../../nodes/CaptioningPollingTrigger/CaptioningPollingTrigger.node';
import { CaptioningTrigger } from '../../nodes/CaptioningTrigger/CaptioningTrigger.node';

const description = new Captioning().description;
const create = (name: string) =>
	description.properties.find(
		(p) => p.name === name && JSON.stringify(p.displayOptions).includes('"create"'),
	) as INodeProperties;
const hintOf = (name: string) => create(name).builderHint?.propertyHint ?? '';

test("every node passes n8n 2.41.1's load check of its description", () => {
	for (const node of [new Captioning(), new CaptioningTrigger(), new CaptioningPollingTrigger()])
		expect(() => validateNodeDescription(node.description)).not.toThrow();
	// The check is real: a hint on the operation discriminator stops the package loading.
	const broken = structuredClone(description);
	(broken.properties.find((p) => p.name === 'operation') as INodeProperties).builderHint = {
		propertyHint: 'x',
	};
	expect(() => validateNodeDescription(broken)).toThrow(
		/builderHint on the "operation" discriminator/,
	);
});

test("the hints lead to the Google Drive template's Job → Create: Binary File, a Custom Key from the file ID, On Webhook", () => {
	const template = JSON.parse(
		readFileSync(path.join(__dirname, '../../examples/google-drive-captions.json'), 'utf8'),
	) as { nodes: Array<{ type: string; parameters: Record<string, unknown> }> };
	const order = template.nodes.find(
		(n) => n.type === 'n8n-nodes-captioning.captioning' && n.parameters.operation === 'create',
	)!.parameters;
	expect(order).toMatchObject({
		source: 'binary',
		idempotency: 'custom',
		waitForCompletion: 'webhook',
	});
	const search = description.builderHint?.searchHint ?? '';
	expect(search).toMatch(
		/Google Drive Trigger.*Binary File.*Custom Key.*Drive file ID.*On Webhook.*Get Captions.*SRT/s,
	);
	expect(hintOf('source')).toMatch(
		/^binary after a node that downloads the file \(Google Drive Download/,
	);
	expect(hintOf('idempotency')).toMatch(/^custom with a key built from the source file's ID/);
	expect(hintOf('idempotencyKey')).toMatch(/Google Drive file ID/);
	expect(hintOf('waitForCompletion')).toMatch(/^webhook when n8n is reachable over public HTTPS/);
	// Each value a hint names is one of the parameter's options.
	for (const [name, values] of Object.entries({
		source: ['binary', 's3', 'url'],
		idempotency: ['custom', 'auto'],
		waitForCompletion: ['webhook', 'poll', 'none'],
	})) {
		expect(create(name).options!.map((o) => (o as { value: string }).value)).toEqual(
			expect.arrayContaining(values),
		);
	}
	expect(description.builderHint?.relatedNodes?.map((r) => r.nodeType)).toEqual(
		expect.arrayContaining([
			'n8n-nodes-base.googleDriveTrigger',
			'n8n-nodes-base.googleDrive',
			'n8n-nodes-captioning.captioningTrigger',
		]),
	);
});
