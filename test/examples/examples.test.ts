// The templates (examples/) are users' starting points, and their saved parameters are what a
// renamed parameter would break: every parameter our nodes have in a template must be one the node
// defines (at any depth of a collection), and every node version one the node has. Each carries
// sticky notes that say what it does, what to set and what it costs, and names every placeholder it
// holds; each is run to the end by an e2e suite (test/e2e imports each into real n8n and checks
// n8n's own node types there).
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

test('there are templates for Google Drive and S3 that need no local disk', () => {
	for (const name of ['google-drive-captions.json', 's3-captions.json']) {
		expect(files).toContain(name);
		const text = readFileSync(path.join(examples, name), 'utf8');
		expect(text).not.toMatch(/readWriteFile|readBinaryFile|\/tmp\/|\.n8n-files/);
	}
});

/** The e2e suite that runs each template to the end in real n8n, against the sandbox. */
const RUN_BY: Record<string, string> = {
	'order-and-wait.json': 'e2e.test.ts',
	'caption-new-files.json': 'e2e.test.ts',
	'store-captions.json': 'e2e.test.ts',
	'order-and-wait-webhook.json': 'e2e.test.ts',
	'poll-finished-jobs.json': 'e2e.test.ts',
	's3-captions.json': 'templates.test.ts',
	'google-drive-captions.json': 'templates.test.ts',
};

test('every template is run to the end by an e2e suite', () => {
	expect(Object.keys(RUN_BY).sort()).toEqual([...files].sort());
	for (const [file, suite] of Object.entries(RUN_BY)) {
		const source = readFileSync(path.resolve(__dirname, '../e2e', suite), 'utf8');
		expect({ file, named: source.includes(`'${file.replace(/\.json$/, '')}'`) }).toEqual({
			file,
			named: true,
		});
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

	const notes = workflow.nodes
		.filter((n) => n.type === 'n8n-nodes-base.stickyNote')
		.map((n) => String(n.parameters.content))
		.join('\n');

	test("its sticky notes say what it does, what to set and what it costs, in n8n's gallery style", () => {
		// A title and a paragraph on what it does, then what to set and what it costs.
		for (const heading of [/^## \S.*\n\S/m, /^### Set up$/m, /^### What it costs$/m])
			expect(notes).toMatch(heading);
	});

	test('every placeholder it holds is named in its notes, and none is hidden', () => {
		const settings = JSON.stringify(
			workflow.nodes.filter((n) => n.type !== 'n8n-nodes-base.stickyNote').map((n) => n.parameters),
		);
		const placeholders = [...new Set(settings.match(/YOUR-[A-Z-]+/g) ?? [])];
		const folders = [...new Set(settings.match(/\/home\/node\/\.n8n-files\/[\w-]+/g) ?? [])];
		for (const placeholder of [...placeholders, ...folders])
			expect({ placeholder, named: notes.includes(placeholder) }).toEqual({
				placeholder,
				named: true,
			});
		// No address that looks real but is not, and no resource left empty for the user to find.
		expect(settings).not.toMatch(/example\.(com|org|net)/);
		expect(settings).not.toMatch(/"value":""/);
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

test('the S3 template orders by S3 Object from the bucket named once, filters out non-videos, and moves each finished video with its captions out of incoming/', () => {
	const workflow = JSON.parse(readFileSync(path.join(examples, 's3-captions.json'), 'utf8')) as {
		nodes: ExampleNode[];
	};
	const byName = Object.fromEntries(workflow.nodes.map((n) => [n.name, n]));
	expect(byName['List Videos'].parameters).toMatchObject({
		bucketName: 'YOUR-BUCKET',
		options: { folderKey: 'incoming/' },
	});
	expect(byName['Order Captions'].parameters).toMatchObject({
		source: 's3',
		s3Bucket: "={{ $('List Videos').params.bucketName }}",
		s3Key: '={{ $json.Key }}',
	});
	expect(JSON.stringify(workflow.nodes).match(/YOUR-BUCKET/g)).toHaveLength(2); // the node, its note
	expect(workflow.nodes.some((n) => n.parameters.operation === 'download')).toBe(false);
	// n8n's own expression engine, on a job the polling trigger reports (its item, as the nodes
	// after it read it through $('Captions Ready')).
	const resolve = (expression: string, json: object) =>
		Expression.resolveWithoutWorkflow(
			expression.replace(/^=/, '').replaceAll("$('Captions Ready').item.json", '$json'),
			{ $json: json, encodeURI },
		);
	const job = (status: string) => ({
		status,
		metadata: { s3_bucket: 'videos', s3_key: 'incoming/talk final.mp4' },
	});
	for (const [name, ext] of [
		['Upload SRT', 'srt'],
		['Upload VTT', 'vtt'],
	]) {
		const { fileName, additionalFields } = byName[name].parameters as {
			fileName: string;
			additionalFields: { parentFolderKey: string };
		};
		expect([resolve(fileName, job('completed')), additionalFields.parentFolderKey]).toEqual([
			`talk final.${ext}`,
			'done',
		]);
	}
	const copy = byName['Copy Video'].parameters as { sourcePath: string; destinationPath: string };
	expect(
		['completed', 'cancelled'].map((status) => [
			resolve(copy.sourcePath, job(status)),
			resolve(copy.destinationPath, job(status)),
		]),
	).toEqual([
		// S3 takes the copy's source URL-encoded, as a path.
		['/videos/incoming/talk%20final.mp4', '/videos/done/talk final.mp4'],
		['/videos/incoming/talk%20final.mp4', '/videos/failed/talk final.mp4'],
	]);
	expect(
		resolve(String(byName['Delete from incoming/'].parameters.fileKey), job('completed')),
	).toBe('incoming/talk final.mp4');
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

test('the Google Drive template orders only what its Media Only filter lets through, right after its trigger', () => {
	const workflow = JSON.parse(
		readFileSync(path.join(examples, 'google-drive-captions.json'), 'utf8'),
	) as {
		nodes: ExampleNode[];
		connections: Record<string, { main: Array<Array<{ node: string }>> }>;
	};
	const trigger = workflow.nodes.find((n) => n.type === 'n8n-nodes-base.googleDriveTrigger')!;
	const next = workflow.connections[trigger.name].main[0].map((c) => c.node);
	expect(next).toEqual(['Media Only']);
	const filter = workflow.nodes.find((n) => n.name === 'Media Only')!;
	expect(filter.type).toBe('n8n-nodes-base.filter');
	expect(filter.parameters.conditions).toMatchObject({
		combinator: 'or',
		conditions: [
			{
				leftValue: '={{ $json.mimeType }}',
				rightValue: 'video/',
				operator: { operation: 'startsWith' },
			},
			{
				leftValue: '={{ $json.mimeType }}',
				rightValue: 'audio/',
				operator: { operation: 'startsWith' },
			},
		],
	});
});
