// Workflows the e2e suites build, and the templates of examples/ as a user sets them up.
import { readFileSync } from 'node:fs';
import path from 'node:path';

import type { S3Server } from '../helpers/s3Bucket';
import { tempJson } from './instance';

/** A node of workflow `id`, at x along one row. */
export const node = (
	id: string,
	name: string,
	type: string,
	typeVersion: number,
	parameters: object,
	x: number,
	extra: object = {},
) => ({ id: `${id}-${name}`, name, type, typeVersion, parameters, position: [x, 0], ...extra });

type Node = ReturnType<typeof node>;

/** Manual Trigger → these nodes, one after the other. */
export const manualWorkflow = (id: string, name: string, steps: Node[]): string =>
	chainWorkflow(id, name, [node(id, 'Start', 'n8n-nodes-base.manualTrigger', 1, {}, 0), ...steps]);

/** A workflow file of these nodes, each connected to the next. */
export function chainWorkflow(
	id: string,
	name: string,
	nodes: Node[],
	settings: object = {},
): string {
	const names = nodes.map((n) => n.name);
	const connections = Object.fromEntries(
		names
			.slice(0, -1)
			.map((from, n) => [from, { main: [[{ node: names[n + 1], type: 'main', index: 0 }]] }]),
	);
	return tempJson(`${id}.json`, {
		id,
		name,
		versionId: `${id}-v1`,
		active: false,
		settings: { executionOrder: 'v1', ...settings },
		nodes,
		connections,
	});
}

/** n8n's Webhook node at POST /webhook/<hook>, answering once the execution is stored. */
export const webhookNode = (id: string, hook: string) =>
	node(
		id,
		'Request',
		'n8n-nodes-base.webhook',
		2,
		{ httpMethod: 'POST', path: hook, responseMode: 'onReceived', options: {} },
		0,
		{ webhookId: `${id}-hook` },
	);

/** Webhook (POST /webhook/<hook>) → n media URLs, one item each → Job → Create (On Webhook unless `wait` says) → No Operation → `after`. */
export function batchWaitWorkflow(
	id: string,
	hook: string,
	urls: string[],
	timeout: number,
	credentialId: string,
	settings: object = {},
	wait: object = { waitForCompletion: 'webhook' },
	after: Node[] = [],
): string {
	return chainWorkflow(
		id,
		`Batch wait: ${id}`,
		[
			webhookNode(id, hook),
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
			...after,
		],
		settings,
	);
}

/** A node of a template as its JSON holds it. */
export interface TemplateNode {
	id: string;
	name: string;
	type: string;
	typeVersion: number;
	position: number[];
	parameters: Record<string, unknown>;
	credentials?: Record<string, { id: string; name: string }>;
	webhookId?: string;
}

/** A template of examples/ as its JSON holds it. */
export interface Template {
	name: string;
	nodes: TemplateNode[];
	connections: Record<
		string,
		{ main: Array<Array<{ node: string; type: string; index: number }>> }
	>;
}

/** Where the templates that read or write the disk keep their files (named in their sticky notes). */
export const TEMPLATE_DISK = '/home/node/.n8n-files/captioning';

/**
 * A template of examples/ as a user sets it up: each placeholder replaced by what `replace` names
 * (their text, e.g. `TEMPLATE_DISK` or `YOUR-BUCKET`), then `edit` (credentials picked, a node
 * swapped for a test's own).
 */
export function template(
	name: string,
	replace: Record<string, string>,
	edit: (template: Template) => void = () => undefined,
): Template {
	let text = readFileSync(path.resolve(__dirname, '../../examples', `${name}.json`), 'utf8');
	for (const [placeholder, value] of Object.entries(replace))
		text = text.replaceAll(placeholder, value);
	const parsed = JSON.parse(text) as Template;
	edit(parsed);
	return parsed;
}

/** The template's file to import, under workflow id `id` (1.x needs a versionId). */
export const templateFile = (value: Template, id: string): string =>
	tempJson(`${id}.json`, { ...value, id, versionId: `${id}-v1` });

/** The S3 credentials the S3 template picks, for the local S3 server: n8n's AWS one and the Captioning S3 Media one. */
export const s3TemplateCredentials = (s3: S3Server): object[] => [
	{
		id: 'awsLocal',
		name: 'Local S3',
		type: 'aws',
		data: {
			region: 'us-east-1',
			accessKeyId: s3.accessKeyId,
			secretAccessKey: s3.secretAccessKey,
			temporaryCredentials: false,
			customEndpoints: true,
			s3Endpoint: s3.endpoint,
		},
	},
	{
		id: 's3Media',
		name: 'Local S3 media',
		type: 'captioningS3Api',
		data: {
			region: 'us-east-1',
			accessKeyId: s3.accessKeyId,
			secretAccessKey: s3.secretAccessKey,
			endpoint: s3.endpoint,
			forcePathStyle: true,
		},
	},
];

/**
 * The S3 template's set-up against the local S3 server (an `edit` for `template`): `captioningApi`
 * and s3TemplateCredentials picked, its Schedule Trigger a Manual Trigger (n8n's CLI runs only
 * workflows that start with one); `edit` changes a node further.
 */
export const localS3Setup =
	(
		captioningApi: { id: string; name: string },
		edit: (node: TemplateNode) => void = () => undefined,
	) =>
	({ nodes }: Template): void => {
		for (const n of nodes) {
			if (n.type === 'n8n-nodes-base.scheduleTrigger')
				Object.assign(n, { type: 'n8n-nodes-base.manualTrigger', typeVersion: 1, parameters: {} });
			if (n.type === 'n8n-nodes-base.awsS3')
				n.credentials = { aws: { id: 'awsLocal', name: 'Local S3' } };
			if (n.type.startsWith('n8n-nodes-captioning.')) n.credentials = { captioningApi };
			if (n.type === 'n8n-nodes-captioning.captioning')
				n.credentials!.captioningS3Api = { id: 's3Media', name: 'Local S3 media' };
			edit(n);
		}
	};
