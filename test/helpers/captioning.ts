// Runs the real Captioning node in n8n's execution engine against a sandbox.
import type {
	ICredentialDataDecryptedObject,
	IDataObject,
	IExecuteContextData,
	INode,
	INodeExecutionData,
	WorkflowExecuteMode,
} from 'n8n-workflow';

import { Captioning } from '../../nodes/Captioning/Captioning.node.js';
import type { RunResult } from '../engine/workflow';
import { node, runWorkflow } from '../engine/workflow';
import type { Sandbox } from './sandbox';

export const NODE = 'Captioning';

let workflows = 0;

export interface NodeRun extends RunResult {
	items: INodeExecutionData[];
	/** The node's error as n8n stored it, when the node failed. */
	failure?: {
		message: string;
		description?: string;
		httpCode?: string;
		context?: IDataObject;
		name?: string;
	};
	/** The execution hints n8n shows above the node's output. */
	hints: Array<{ message: string; type?: string; location?: string }>;
}

export async function runCaptioning(
	sb: Sandbox,
	parameters: IDataObject,
	options: {
		input?: INodeExecutionData[];
		key?: string;
		settings?: Partial<INode>;
		onStart?: (cancel: () => void) => void;
		webhookWaitingBaseUrl?: string;
		/** Runs of one workflow share it (its orders, n8n's deduplication store); each run is its own workflow by default. */
		workflowId?: string;
		mode?: WorkflowExecuteMode;
		contextData?: IExecuteContextData;
		/** The Captioning S3 Media credential's fields (S3 Object sources). */
		s3?: IDataObject;
		/** The Captioning API credential's Webhook Secret Token. */
		webhookToken?: string;
		/** The Captioning API credential's Base URL (default: the sandbox's). */
		baseUrl?: string;
	} = {},
): Promise<NodeRun> {
	const result = await runWorkflow({
		nodes: [node(NODE, 'captioning', parameters, { typeVersion: 1, ...options.settings })],
		workflowId: options.workflowId ?? `workflow-${++workflows}`,
		mode: options.mode,
		contextData: options.contextData,
		nodeTypes: { captioning: new Captioning() },
		credentials: {
			captioningApi: {
				apiKey: options.key ?? sb.keys.full,
				baseUrl: options.baseUrl ?? sb.baseUrl,
				webhookToken: options.webhookToken ?? '',
			},
			...(options.s3 ? { captioningS3Api: options.s3 as ICredentialDataDecryptedObject } : {}),
		},
		input: options.input,
		onStart: options.onStart,
		webhookWaitingBaseUrl: options.webhookWaitingBaseUrl,
	});
	return {
		...result,
		items: result.output(NODE),
		failure: result.error(NODE) as NodeRun['failure'],
		hints: result.run.data.resultData.runData[NODE]?.[0]?.hints ?? [],
	};
}

export const MEDIA = 'https://media.example.com/talk.mp4';

/** Orders a job straight at the sandbox (not through n8n), as the dashboard or another tool would; returns its id. */
export async function orderDirectly(
	sb: Sandbox,
	body: IDataObject = {},
	key = sb.keys.full,
): Promise<string> {
	const res = await fetch(`${sb.baseUrl}/jobs`, {
		method: 'POST',
		headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
		body: JSON.stringify({ media_url: MEDIA, ...body }),
	});
	return ((await res.json()) as { id: string }).id;
}

/** The n-th forged completion event: a made-up job id no workspace holds, as a stranger would post it. */
export const forgedEvent = (n: number) => ({
	id: `evt_forged_${n}`,
	object: 'event',
	type: 'job.completed',
	created_at: new Date().toISOString(),
	data: {
		id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
		object: 'job',
		status: 'completed',
	},
});
