// The example workflows are users' starting points, and their saved parameters are what a renamed
// parameter would break: every parameter our nodes have in an example must be one the node defines
// (at any depth of a collection), and every node version one the node has. (test/e2e imports each
// example into real n8n and checks n8n's own node types there.)
import { readdirSync, readFileSync } from 'node:fs';
import type { INodeProperties, INodeType } from 'n8n-workflow';
import { Expression } from 'n8n-workflow';
import path from 'node:path';

import { Captioning } from '../../nodes/Captioning/Captioning.node.js';
import { CaptioningPollingTrigger } from '../../nodes/CaptioningPollingTrigger/CaptioningPollingTrigger.node.js';
import { CaptioningTrigger } from '../../nodes/CaptioningTrigger/CaptioningTrigger.node.js';

const examples = path.resolve(__dirname, '../../examples');
const ours: Record<string, INodeType> = {
	'n8n-nodes-captioning.captioning': new Captioning(),
	'n8n-nodes-captioning.captioningTrigger': new CaptioningTrigger(),
	'n8n-nodes-captioning.captioningPollingTrigger': new CaptioningPollingTrigger(),
};

interface ExampleNode {
	name: string;
	type: string;
	typeVersion: number;
	parameters: Record<string, unknown>;
}

/** Parameter paths the node does not define, e.g. "options.webhookUrl". */
function undefinedParameters(type: INodeType, parameters: Record<string, unknown>): string[] {
	const unknown: string[] = [];
	const walk = (values: Record<string, unknown>, properties: INodeProperties[], prefix: string) => {
		for (const [key, value] of Object.entries(values)) {
			if (key === 'pollTimes' && type.description.polling) continue; // n8n adds it to every polling node
			const defined = properties.filter((p) => p.name === key);
			if (!defined.length) {
				unknown.push(`${prefix}${key}`);
				continue;
			}
			for (const property of defined) {
				if (property.type === 'collection' && value && typeof value === 'object') {
					walk(
						value as Record<string, unknown>,
						property.options as INodeProperties[],
						`${prefix}${key}.`,
					);
				}
				if (property.type === 'fixedCollection' && value && typeof value === 'object') {
					for (const [group, entries] of Object.entries(value as Record<string, unknown>)) {
						const option = (
							property.options as Array<{ name: string; values: INodeProperties[] }>
						).find((o) => o.name === group);
						if (!option) unknown.push(`${prefix}${key}.${group}`);
						else
							for (const entry of [entries].flat() as Array<Record<string, unknown>>)
								walk(entry, option.values, `${prefix}${key}.${group}.`);
					}
				}
			}
		}
	};
	walk(parameters, type.description.properties, '');
	return [...new Set(unknown)];
}

const files = readdirSync(examples).filter((f) => f.endsWith('.json'));

test('there are examples for Google Drive and S3, which work on n8n Cloud (nothing on local disk)', () => {
	for (const name of ['google-drive-captions.json', 's3-captions.json']) {
		expect(files).toContain(name);
		const text = readFileSync(path.join(examples, name), 'utf8');
		expect(text).not.toMatch(/readWriteFile|readBinaryFile|\/tmp\//);
	}
});

describe.each(files)('%s', (file) => {
	const workflow = JSON.parse(readFileSync(path.join(examples, file), 'utf8')) as {
		nodes: ExampleNode[];
		connections: Record<string, unknown>;
	};
	const captioningNodes = workflow.nodes.filter((n) => n.type.startsWith('n8n-nodes-captioning.'));

	test('uses our nodes, in versions they have, with parameters they define', () => {
		expect(captioningNodes.length).toBeGreaterThan(0);
		for (const node of captioningNodes) {
			const type = ours[node.type];
			expect(type).toBeDefined();
			expect([type.description.version].flat()).toContain(node.typeVersion);
			expect({ node: node.name, unknown: undefinedParameters(type, node.parameters) }).toEqual({
				node: node.name,
				unknown: [],
			});
		}
	});

	test('every connection joins nodes of the workflow', () => {
		const names = new Set(workflow.nodes.map((n) => n.name));
		for (const [from, outputs] of Object.entries(workflow.connections)) {
			expect(names).toContain(from);
			for (const link of Object.values(
				outputs as Record<string, Array<Array<{ node: string }>>>,
			).flat(2))
				expect(names).toContain(link.node);
		}
	});
});

test('the check finds a renamed or made-up parameter, also inside a collection', () => {
	const captioning = ours['n8n-nodes-captioning.captioning'];
	expect(
		undefinedParameters(captioning, {
			resource: 'job',
			operation: 'create',
			mediaURL: 'x',
			options: { webhookUrl: 'https://a', webhook: 'https://b' },
		}),
	).toEqual(['mediaURL', 'options.webhook']);
	expect(
		undefinedParameters(captioning, {
			options: { metadata: { pair: [{ key: 'a', value: 'b', extra: 1 }] } },
		}),
	).toEqual(['options.metadata.pair.extra']);
});

test('the S3 template orders by S3 Object, filters out non-videos, and puts the captions next to each video', () => {
	const workflow = JSON.parse(readFileSync(path.join(examples, 's3-captions.json'), 'utf8')) as {
		nodes: ExampleNode[];
	};
	const byName = Object.fromEntries(workflow.nodes.map((n) => [n.name, n]));
	expect(byName['Order Captions'].parameters).toMatchObject({
		source: 's3',
		s3Key: '={{ $json.Key }}',
	});
	expect(workflow.nodes.some((n) => n.parameters.operation === 'download')).toBe(false);
	// n8n's own expression engine, on a job the polling trigger reports.
	const resolve = (expression: string, json: object) =>
		Expression.resolveWithoutWorkflow(expression.replace(/^=/, ''), { $json: json });
	const job = { metadata: { s3_bucket: 'my-videos', s3_key: 'incoming/week 1/talk.final.mp4' } };
	for (const [name, ext] of [
		['Upload SRT', 'srt'],
		['Upload VTT', 'vtt'],
	]) {
		const { fileName, additionalFields } = byName[name].parameters as {
			fileName: string;
			additionalFields: { parentFolderKey: string };
		};
		expect([resolve(fileName, job), resolve(additionalFields.parentFolderKey, job)]).toEqual([
			`talk.final.${ext}`,
			'incoming/week 1',
		]);
	}
	const videoPattern = new RegExp(
		(
			byName['Videos Only'].parameters.conditions as { conditions: Array<{ rightValue: string }> }
		).conditions[0].rightValue,
		'i',
	);
	expect(
		['incoming/a.mp4', 'incoming/b.MOV', 'incoming/c.srt', 'incoming/d.vtt', 'incoming/'].map((k) =>
			videoPattern.test(k),
		),
	).toEqual([true, true, false, false, false]);
});
