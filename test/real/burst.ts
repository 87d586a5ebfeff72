// A burst of job events at real n8n, for the e2e suite (test/e2e/burst.test.ts) and the bench:
// `count` jobs finish within two seconds, the service delivers each event twice and allows 10 reads
// a second. The same burst goes to the Captioning Trigger (Verify Events on), to the Captioning
// Trigger with Attach Captions (SRT, written to a file per job, as the Drive and S3 templates use it)
// and to n8n's own Webhook node (which reads nothing: the floor any trigger on this n8n can reach),
// one after the other in the same n8n. The sandbox, as the sender, times each delivery until n8n's
// answer, and gives up on a try after 10 s (then delivers it again).
import path from 'node:path';

import { workspaceToken } from '../../nodes/Captioning/model/events';
import type { Sandbox } from '../helpers/sandbox';
import { executionsApi } from './executions';
import type { N8n } from './instance';
import { tempJson } from './instance';

/** Jobs that finish within two seconds in a burst (what a batch of videos finishing together sends). */
export const BURST_EVENTS = 150;
export const BURST_TRIGGER_WORKFLOW = 'wfBurstTrigger01';
/** The same trigger (Verify Events, then a No Op) on the credential without a token of its own. */
export const BURST_WORKSPACE_WORKFLOW = 'wfBurstWorkspac1';
const WORKSPACE_WEBHOOK_ID = '6e5d4c3b-2a1f-4e0d-9c8b-7a6f5e4d3c21';
export const BURST_WEBHOOK_WORKFLOW = 'wfBurstWebhook01';
export const BURST_CAPTIONS_WORKFLOW = 'wfBurstCaptions1';
/** n8n's Webhook node at version 1: under n8n's defaults it pays the expression isolate every other trigger pays. */
export const BURST_WEBHOOK_V1_WORKFLOW = 'wfBurstWebhookV1';
const TRIGGER_WEBHOOK_ID = '5d2e8a41-7c3b-4f9e-a1d6-0b9c8e7f6a51';
/** The credentials' Webhook Secret Token: it travels on the URL. */
const TOKEN = 'burst-token';
/** The trigger with Attach Captions whose credentials set no token (README's set-up). */
export const BURST_DERIVED_WORKFLOW = 'wfBurstDerived01';
const DERIVED_WEBHOOK_ID = '3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f';
const DERIVED_CREDENTIAL_ID = 'captioningBurstDerived';
/** The sandbox's first workspace, whose token Job → Create adds to a trigger's URL. */
const WORKSPACE_ID = '5b0e8f7e-3c57-4a51-9d3e-0c1f4a2b6d01';
const CAPTIONS_WEBHOOK_ID = '7b1c9e2d-4a6f-4e8b-9c3d-2f1e0a9b8c53';
const WEBHOOK_PATH = 'burst-webhook-node';
/** n8n's Webhook node writing each event's body to a file, as the captions workflow writes its SRT. */
export const BURST_WEBHOOK_WRITE_WORKFLOW = 'wfBurstWebhookWr';
const WEBHOOK_WRITE_PATH = 'burst-webhook-node-write';
const WEBHOOK_V1_PATH = 'burst-webhook-node-v1';
/** The credential (the sandbox's full key) the burst workflows read with. */
export const BURST_CREDENTIAL_ID = 'captioningBurst';
const CREDENTIAL_ID = BURST_CREDENTIAL_ID;

/** The burst credentials: one with a token of its own (or `rotated` to a new one), one without. */
function burstCredentials(sb: Sandbox, rotated?: string): object[] {
	const token = { webhookToken: rotated ?? TOKEN };
	return [
		{
			id: CREDENTIAL_ID,
			name: CREDENTIAL_ID,
			type: 'captioningApi',
			data: { apiKey: sb.keys.full, baseUrl: sb.baseUrl, ...token },
		},
		{
			id: DERIVED_CREDENTIAL_ID,
			name: DERIVED_CREDENTIAL_ID,
			type: 'captioningApi',
			data: { apiKey: sb.keys.full, baseUrl: sb.baseUrl },
		},
	];
}

/**
 * As the templates store captions: a file per job in `folder`, named by the expression `jobId`
 * (appended: a job reported twice would show).
 */
export const writeSrtNode = (id: string, folder: string, jobId: string) => ({
	id: `${id}-write`,
	name: 'Write SRT',
	type: 'n8n-nodes-base.readWriteFile',
	typeVersion: 1,
	position: [220, 0],
	parameters: {
		operation: 'write',
		fileName: `=${folder}/${jobId}.srt`,
		dataPropertyName: 'data',
		options: { append: true },
	},
});

/** Imports the burst credentials at once (also into a running n8n: a rotation). */
export async function importBurstCredentials(n8n: N8n, sb: Sandbox, rotated?: string) {
	await n8n.cli([
		'import:credentials',
		`--input=${tempJson('burst-credentials.json', burstCredentials(sb, rotated))}`,
	]);
}

/**
 * Imports the credentials and workflows with the instance's next start or CLI run; call before n8n starts. `captionsTo`: a folder n8n
 * may write to, for the trigger with Attach Captions (one SRT file per job).
 */
export function importBurstWorkflows(n8n: N8n, sb: Sandbox, captionsTo?: string): void {
	n8n.importCredentials(burstCredentials(sb));
	const noOp = (id: string) => ({
		id: `${id}-noop`,
		name: 'Next',
		type: 'n8n-nodes-base.noOp',
		typeVersion: 1,
		position: [220, 0],
		parameters: {},
	});
	const workflow = (id: string, name: string, trigger: object, next: object = noOp(id)) => ({
		id,
		name,
		versionId: `${id}-v1`,
		active: false,
		settings: { executionOrder: 'v1' },
		nodes: [trigger, next],
		connections: {
			[(trigger as { name: string }).name]: {
				main: [[{ node: (next as { name: string }).name, type: 'main', index: 0 }]],
			},
		},
	});
	/** n8n's Webhook node, answering a POST to `path` once the execution is stored. */
	const webhookNode = (
		id: string,
		version: number,
		webhookId: string,
		path: string,
		options = {},
	) => ({
		id,
		name: 'Webhook',
		type: 'n8n-nodes-base.webhook',
		typeVersion: version,
		position: [0, 0],
		webhookId,
		parameters: { httpMethod: 'POST', path, responseMode: 'onReceived', options },
	});
	/** The Captioning Trigger (Verify Events), with `parameters` added. */
	const triggerNode = (id: string, webhookId: string, credential: string, parameters = {}) => ({
		id: `${id}-trigger`,
		name: 'Job Event',
		type: 'n8n-nodes-captioning.captioningTrigger',
		typeVersion: 2,
		position: [0, 0],
		webhookId,
		parameters: { events: ['job.completed', 'job.cancelled'], verify: true, ...parameters },
		credentials: { captioningApi: { id: credential, name: credential } },
	});
	const verifying = (id: string, webhookId: string, credential: string) =>
		workflow(
			id,
			`Burst: Captioning Trigger (${credential})`,
			triggerNode(id, webhookId, credential),
		);
	n8n.importWorkflows([
		tempJson('burst-trigger.json', [
			verifying(BURST_TRIGGER_WORKFLOW, TRIGGER_WEBHOOK_ID, CREDENTIAL_ID),
			verifying(BURST_WORKSPACE_WORKFLOW, WORKSPACE_WEBHOOK_ID, DERIVED_CREDENTIAL_ID),
		]),
		tempJson(
			'burst-webhook.json',
			workflow(
				BURST_WEBHOOK_WORKFLOW,
				"Burst: n8n's Webhook node",
				webhookNode('burst-webhook', 2, '9a7b6c5d-4e3f-4a2b-8c1d-0e9f8a7b6c52', WEBHOOK_PATH),
			),
		),
	]);
	n8n.importWorkflows([
		tempJson(
			'burst-webhook-v1.json',
			workflow(
				BURST_WEBHOOK_V1_WORKFLOW,
				"Burst: n8n's Webhook node v1",
				webhookNode('burst-webhook-v1', 1, '1b2c3d4e-5f6a-4b7c-8d9e-0f1a2b3c4d5e', WEBHOOK_V1_PATH),
			),
		),
	]);
	if (captionsTo) {
		const captions = (id: string, webhookId: string, credential: string) =>
			workflow(
				id,
				`Burst: Captioning Trigger, Attach Captions (${credential})`,
				triggerNode(id, webhookId, credential, {
					attachCaptions: true,
					formats: ['srt'],
					binaryPropertyName: 'data',
				}),
				writeSrtNode(id, captionsTo, '{{ $json.id }}'),
			);
		n8n.importWorkflows([
			tempJson('burst-captions.json', [
				captions(BURST_CAPTIONS_WORKFLOW, CAPTIONS_WEBHOOK_ID, CREDENTIAL_ID),
				captions(BURST_DERIVED_WORKFLOW, DERIVED_WEBHOOK_ID, DERIVED_CREDENTIAL_ID),
			]),
			// The reference for the captions workflow: the Webhook node's body (the event) as the file.
			tempJson(
				'burst-webhook-write.json',
				workflow(
					BURST_WEBHOOK_WRITE_WORKFLOW,
					"Burst: n8n's Webhook node, a file per event",
					webhookNode(
						'burst-webhook-write',
						2,
						'2c3d4e5f-6a7b-4c8d-9e0f-1a2b3c4d5e60',
						WEBHOOK_WRITE_PATH,
						{
							rawBody: true,
						},
					),
					writeSrtNode(BURST_WEBHOOK_WRITE_WORKFLOW, captionsTo, '{{ $json.body.data.id }}'),
				),
			),
		]);
	}
}

/** The SRT files the captions workflow wrote, by job id. */
export function srtPath(captionsTo: string, jobId: string): string {
	return path.join(captionsTo, `${jobId}.srt`);
}

/** Activates the workflows and waits until their webhooks answer. */
export async function activateBurstWorkflows(n8n: N8n, captions = false): Promise<void> {
	const api = executionsApi(() => n8n);
	await api.activate([
		BURST_TRIGGER_WORKFLOW,
		BURST_WORKSPACE_WORKFLOW,
		BURST_WEBHOOK_WORKFLOW,
		BURST_WEBHOOK_V1_WORKFLOW,
		...(captions
			? [BURST_CAPTIONS_WORKFLOW, BURST_DERIVED_WORKFLOW, BURST_WEBHOOK_WRITE_WORKFLOW]
			: []),
	]);
	// 2.x registers production webhooks in the background after start: wait until each is there.
	for (const target of [
		'trigger',
		'triggerWorkspace',
		...(captions ? CAPTIONS_TARGETS : []),
	] as const)
		await api.waitFor(`the ${target} burst webhook`, async () =>
			(await n8n.post(TARGETS[target].path, {})).status === 400 ? true : undefined,
		);
	for (const path of [WEBHOOK_PATH, WEBHOOK_V1_PATH, ...(captions ? [WEBHOOK_WRITE_PATH] : [])])
		await api.waitFor("the Webhook node's webhook", async () =>
			(await n8n.post(`/webhook/${path}`, { warmUp: true })).status === 200 ? true : undefined,
		);
}

export type BurstTarget =
	| 'trigger'
	| 'triggerWorkspace'
	| 'triggerCaptions'
	| 'triggerDerived'
	| 'webhookNode'
	| 'webhookNodeV1'
	| 'webhookNodeWrite';

export interface BurstResult {
	target: BurstTarget;
	events: number;
	/** Jobs the service delivered events for, and the executions n8n started for them. */
	ids: string[];
	executions: number;
	/** Deliveries (each event twice, and any the service tried again) and their answers. */
	deliveries: Array<{
		eventId: string;
		jobId: string;
		attempt: number;
		status: number | null;
		error: string | null;
		ms?: number;
	}>;
	/** Reads of jobs by the trigger's key during the burst (GET /jobs and GET /jobs/{id}), and 429s among them. */
	reads: number;
	refused: number;
	/** Every read by the key during the burst (caption downloads on the API host too), and 429s among them. */
	allReads: number;
	allRefused: number;
	/** 95th percentile of the time until n8n answered a delivery (its first try), in ms. */
	p95Ms: number;
	/** First tries the sender gave up on (no answer within its 10 s) or that failed. */
	senderTimeouts: number;
	/** From the first job finishing until every execution was there. */
	totalMs: number;
}

const percentile = (xs: number[], p: number) =>
	[...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)];

/** A trigger's URL with the credentials' own Webhook Secret Token. */
const ownTokenPath = (webhookId: string) => `/webhook/${webhookId}/captioning?token=${TOKEN}`;
/** A trigger's URL with the token Job → Create adds for the workspace. */
const workspacePath = (webhookId: string) =>
	`/webhook/${webhookId}/captioning?token=${workspaceToken(WORKSPACE_ID, `/webhook/${webhookId}/captioning`)}`;
const CAPTIONS_TARGETS = ['triggerCaptions', 'triggerDerived'] as const;

const TARGETS: Record<BurstTarget, { workflowId: string; path: string }> = {
	trigger: {
		workflowId: BURST_TRIGGER_WORKFLOW,
		path: ownTokenPath(TRIGGER_WEBHOOK_ID),
	},
	triggerWorkspace: {
		workflowId: BURST_WORKSPACE_WORKFLOW,
		path: workspacePath(WORKSPACE_WEBHOOK_ID),
	},
	triggerCaptions: {
		workflowId: BURST_CAPTIONS_WORKFLOW,
		path: ownTokenPath(CAPTIONS_WEBHOOK_ID),
	},
	triggerDerived: {
		workflowId: BURST_DERIVED_WORKFLOW,
		path: workspacePath(DERIVED_WEBHOOK_ID),
	},
	webhookNode: { workflowId: BURST_WEBHOOK_WORKFLOW, path: `/webhook/${WEBHOOK_PATH}` },
	webhookNodeV1: { workflowId: BURST_WEBHOOK_V1_WORKFLOW, path: `/webhook/${WEBHOOK_V1_PATH}` },
	webhookNodeWrite: {
		workflowId: BURST_WEBHOOK_WRITE_WORKFLOW,
		path: `/webhook/${WEBHOOK_WRITE_PATH}`,
	},
};

/** The workflow a target's deliveries start. */
export const burstWorkflowId = (target: BurstTarget) => TARGETS[target].workflowId;

/** The URL the service calls for a target (to order jobs with, as Job → Create's Webhook URL). */
export const burstUrl = (n8n: N8n, target: BurstTarget) => `${n8n.url}${TARGETS[target].path}`;

/** Orders `count` jobs (manual clock) with the target's URL, as Job → Create's Webhook URL would; returns their ids. */
export async function prepareBurst(
	n8n: N8n,
	sb: Sandbox,
	target: BurstTarget,
	count: number,
): Promise<string[]> {
	const ids: string[] = [];
	// n8n's Webhook node reads nothing: its jobs are ordered on the invoiced workspace, so that the
	// prepaid one's balance is left for the trigger's (which its credential reads back). A minute
	// each: the bench's bursts fit the balance.
	const key = target.startsWith('webhookNode') ? sb.keys.otherWorkspace : sb.keys.full;
	for (let n = 0; n < count; n++) {
		const res = await fetch(`${sb.baseUrl}/jobs`, {
			method: 'POST',
			headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
			body: JSON.stringify({
				media_url: `https://media.example.com/burst-${target}-${n}.mp4?duration=60`,
				webhook_url: burstUrl(n8n, target),
			}),
		});
		ids.push(((await res.json()) as { id: string }).id);
	}
	return ids;
}

/**
 * Completes `count` jobs ordered with the target's URL within `windowMs`, at 10 reads/s. Each event
 * is delivered once (as the interface promises); `duplicate` sends a second copy, `attempts` tries a
 * failed delivery again, `leadMs` sends each event that long before reads show its job completed.
 * `among`: the jobs are prepared (prepareBurst) and the caller has set the limits and cleared the
 * ledger, since other work runs at the same time.
 */
export async function fireBurst(
	n8n: N8n,
	sb: Sandbox,
	target: BurstTarget,
	count: number,
	options: {
		windowMs?: number;
		among?: string[];
		attempts?: number;
		duplicate?: boolean;
		leadMs?: number;
	} = {},
): Promise<BurstResult> {
	const api = executionsApi(() => n8n);
	const { workflowId } = TARGETS[target];
	const windowMs = options.windowMs ?? 2000;
	const executions = async () =>
		(
			await n8n.rest<{ results?: unknown[]; count?: number }>(
				'GET',
				`/executions?limit=1&filter=${encodeURIComponent(JSON.stringify({ workflowId }))}`,
			)
		).body.count ?? 0;
	const before = await executions();
	const ids = options.among ?? (await prepareBurst(n8n, sb, target, count));
	if (!options.among) {
		sb.resetLedger();
		sb.setRateLimits({ readPerSecond: 10 });
	}
	sb.setWebhook({
		duplicate: options.duplicate ?? false,
		attempts: options.attempts ?? 1,
		leadMs: options.leadMs ?? 0,
	});
	const started = Date.now();
	try {
		for (const id of ids) {
			sb.completeJob(id);
			await new Promise((r) => setTimeout(r, windowMs / count));
		}
		await sb.settleDeliveries();
		// Every job's execution, or (n8n overloaded past the sender's retries) as many as came: the
		// caller judges; the e2e suite requires every one.
		await api
			.waitFor(
				`${count} executions of ${workflowId}`,
				async () => ((await executions()) >= before + count ? true : undefined),
				120000,
			)
			.catch(() => undefined);
	} finally {
		if (!options.among) sb.setRateLimits({});
		sb.setWebhook({ duplicate: false, attempts: 1, leadMs: 0 });
	}
	const totalMs = Date.now() - started;
	// Until n8n has started no execution for 3 s (n8n's Webhook node starts one per delivery, the
	// duplicates and the sender's retries too): any execution more than one per job would show, and
	// the next burst meets an idle n8n.
	let seen = -1;
	for (
		let quietSince = Date.now(), deadline = Date.now() + 120000;
		Date.now() < deadline && Date.now() - quietSince < 3000;

	) {
		const count = await executions();
		if (count !== seen) quietSince = Date.now();
		seen = count;
		await new Promise((r) => setTimeout(r, 500));
	}
	const deliveries = sb.ledger.deliveries.filter((d) => ids.includes(d.jobId));
	const reads = sb.ledger.requests.filter(
		(r) => r.keyName === 'full' && (r.route === 'GET /jobs' || r.route === 'GET /jobs/{id}'),
	);
	const allReads = sb.ledger.requests.filter((r) => r.keyName === 'full' && r.method === 'GET');
	const firstTries = deliveries.filter((d) => d.attempt === 1);
	return {
		target,
		events: count,
		ids,
		executions: (await executions()) - before,
		deliveries: deliveries.map(({ eventId, jobId, attempt, status, error, ms }) => ({
			eventId,
			jobId,
			attempt,
			status,
			error,
			ms,
		})),
		reads: reads.length,
		refused: reads.filter((r) => r.status === 429).length,
		allReads: allReads.length,
		allRefused: allReads.filter((r) => r.status === 429).length,
		p95Ms: percentile(
			firstTries.map((d) => d.ms ?? Infinity),
			95,
		),
		senderTimeouts: firstTries.filter((d) => d.status === null || (d.ms ?? Infinity) >= 10000)
			.length,
		totalMs,
	};
}
