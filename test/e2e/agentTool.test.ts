// The Captioning node as an AI Agent's tool ("Captioning Tool"), in n8n's own execution engine: the
// node type as n8n 2.41.1 converts it (its tool-generation code, from the installed n8n), its
// parameters filled by $fromAI, the tool built and invoked by n8n-core's getInputConnectionData, as
// an AI Agent does. What stands in for the language model is the agent node below, which calls the
// tool with the arguments a model would choose; everything from the tool call on is n8n's.
import path from 'node:path';
import type { IExecuteFunctions, INodeExecutionData, INodeType } from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import { Captioning } from '../../nodes/Captioning/Captioning.node.js';
import { node, runWorkflow } from '../engine/workflow';
import { orderDirectly } from '../helpers/captioning';
import type { Sandbox } from '../helpers/sandbox';
import { createSandbox } from '../helpers/sandbox';
import { installN8n } from '../real/instance';

interface CalledTool {
	name: string;
	description: string;
	schema: { shape: Record<string, unknown> };
	invoke(args: Record<string, unknown>): Promise<string>;
}

/** An agent whose "model" calls the first tool once, with the job id it was given. */
const agent: INodeType = {
	description: {
		displayName: 'Agent',
		name: 'agent',
		group: ['transform'],
		version: 1,
		description: 'Calls its tool as a model would',
		defaults: { name: 'Agent' },
		inputs: [
			NodeConnectionTypes.Main,
			{ type: NodeConnectionTypes.AiTool, displayName: 'Tool', required: true },
		],
		outputs: [NodeConnectionTypes.Main],
		properties: [],
	},
	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const tools = (await this.getInputConnectionData(
			NodeConnectionTypes.AiTool,
			0,
		)) as CalledTool[];
		const [tool] = tools;
		const result = await tool.invoke({ job_id: this.getInputData()[0].json.jobId });
		return [
			[
				{
					json: {
						name: tool.name,
						description: tool.description,
						arguments: Object.keys(tool.schema.shape),
						result,
					},
				},
			],
		];
	},
};

let sb: Sandbox;
let captioningTool: INodeType;

beforeAll(
	async () => {
		sb = await createSandbox({ timing: null });
		const install = await installN8n('2.41.1');
		// eslint-disable-next-line @typescript-eslint/no-require-imports
		const { convertNodeToAiTool } = require(
			path.join(install.dir, 'node_modules', 'n8n', 'dist', 'tool-generation', 'ai-tools.js'),
		) as {
			convertNodeToAiTool: <T extends { description: object }>(item: T) => T;
		};
		// As n8n's NodeTypes does: the tool is a copy of the node with the converted description.
		const base = new Captioning();
		const description = Object.create(base.description, {
			properties: { value: Object.create(base.description.properties), writable: false },
		});
		captioningTool = convertNodeToAiTool(
			Object.create(base, { description: { value: description } }) as INodeType,
		);
	},
	40 * 60 * 1000,
);
afterAll(async () => await sb.close());

test('an AI Agent calling Captioning Tool (Job → Get Captions, Job ID from $fromAI) gets the transcript as text', async () => {
	expect(captioningTool.description.name).toBe('captioningTool');
	const id = await orderDirectly(sb, { title: 'Board meeting' });
	sb.completeJob(id);
	const run = await runWorkflow({
		nodes: [
			node('Agent', 'agent', {}, { credentials: undefined }),
			node(
				'Captioning Tool',
				'captioningTool',
				{
					descriptionType: 'auto',
					resource: 'job',
					operation: 'getCaptions',
					jobId: {
						__rl: true,
						mode: 'id',
						value: "={{ $fromAI('job_id', 'The id of the caption job', 'string') }}",
					},
					formats: ['txt', 'json'],
				},
				{ typeVersion: 1 },
			),
		],
		connections: {
			'Captioning Tool': {
				[NodeConnectionTypes.AiTool]: [
					[{ node: 'Agent', type: NodeConnectionTypes.AiTool, index: 0 }],
				],
			},
		},
		nodeTypes: { agent, captioningTool },
		credentials: { captioningApi: { apiKey: sb.keys.readOnly, baseUrl: sb.baseUrl } },
		input: [{ json: { jobId: id } }],
	});
	expect(run.error('Agent')).toBeUndefined();
	const [out] = run.output('Agent');
	expect(out.json).toMatchObject({
		arguments: ['job_id'],
		description: 'Get captions of a job as transcript text or files in Captioning',
	});
	// What the model reads back: the item's JSON, the transcript in it (binary would be dropped).
	const response = JSON.parse(out.json.result as string) as Array<{
		id: string;
		caption_text: { txt: string };
		caption_segments: Array<{ speaker: string; text: string }>;
	}>;
	expect(response[0]).toMatchObject({ id, status: 'completed' });
	expect(response[0].caption_text.txt).toMatch(/back to the show/);
	expect(response[0].caption_segments.map((s) => s.speaker)).toContain('MARIA');
	console.log(
		`the tool "${String(out.json.name)}", described to the model as: ${String(out.json.description)}`,
	);
}, 60000);
