// A waiting execution, resumed the ways n8n resumes one: through the node's restart webhook (as
// n8n's WaitingWebhooks and WebhookHelpers do: the node's run popped, the webhook run in a
// WebhookContext over the saved execution data, its workflowData put in place of the node's input,
// the node disabled so that data passes through) or by time (WorkflowExecute's own handling of
// waitTill). Served over HTTPS, so the sandbox delivers the service's events to it. n8n 2.x lets
// one of several racing resumes win and answers the others 500; so does this, and it counts the
// resumes the node handed over (n8n 1.122.5 runs each). (The e2e suite runs n8n.)
import express from 'express';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { WebhookContext } from 'n8n-core';
import type { INodeType, IRunExecutionData, IWebhookData, IWebhookDescription } from 'n8n-workflow';
import { Workflow } from 'n8n-workflow';

import { tlsPair } from '../helpers/https';
import type { RunOptions, RunResult } from './workflow';
import { additionalDataFor, HarnessNodeTypes, runWorkflow } from './workflow';

export interface WaitingExecution {
	/** The run until the execution was put to wait. */
	first: RunResult;
	/** Every answer the resume webhook gave, in order. */
	answers: Array<{ status: number; body: unknown }>;
	/** How many answers of the node's webhook resumed the execution (workflowData). */
	handed(): number;
	/** Resolves with the rest of the run once a webhook resumed it. */
	resumed: Promise<RunResult>;
	/** Goes on as n8n does when the wait time passes (the node is not run again). */
	resumeByTime(): Promise<RunResult>;
	close(): Promise<void>;
}

/** Serves the resume webhook, then runs the workflow (whose waiting node is `nodeName`) until it waits. */
export async function runUntilWaiting(
	options: RunOptions & { nodeName: string },
): Promise<WaitingExecution> {
	const executionId = options.executionId ?? `waiting-${Date.now()}`;
	const app = express();
	const { key, cert } = tlsPair();
	const server = createServer({ key, cert }, app);
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	const base = `https://127.0.0.1:${(server.address() as AddressInfo).port}/webhook-waiting`;
	const answers: WaitingExecution['answers'] = [];
	let saved: IRunExecutionData | undefined;
	let resumedOnce = false;
	let handed = 0;
	let finish!: (run: RunResult) => void;
	let fail!: (error: Error) => void;
	const resumed = new Promise<RunResult>(
		(resolve, reject) => ((finish = resolve), (fail = reject)),
	);
	const goOn = async (data: IRunExecutionData) =>
		await runWorkflow({ ...options, executionId, resumeFrom: data, webhookWaitingBaseUrl: base });

	app.post(
		'/webhook-waiting/:executionId/:nodeId',
		express.json({ limit: '16mb' }),
		async (req, res) => {
			const record = (status: number, body: unknown) => answers.push({ status, body });
			if (!saved || resumedOnce) {
				record(409, 'finished');
				res.status(409).json({ message: `The execution "${executionId}" has finished already.` });
				return;
			}
			const data = structuredClone(saved);
			data.resultData.runData[options.nodeName]?.pop();
			const nodeType = options.nodeTypes[
				options.nodes.find((n) => n.name === options.nodeName)!.type
			] as INodeType;
			const workflow = new Workflow({
				id: options.workflowId ?? 'harness',
				name: 'harness',
				nodes: options.nodes,
				connections: options.connections ?? {},
				active: false,
				nodeTypes: new HarnessNodeTypes(options.nodeTypes),
				settings: {},
			});
			const node = workflow.getNode(options.nodeName)!;
			const additionalData = additionalDataFor(options.credentials ?? {}, executionId, {
				httpRequest: req,
				httpResponse: res,
				webhookWaitingBaseUrl: base,
			});
			const description = nodeType.description.webhooks![0] as IWebhookDescription;
			const webhookData: IWebhookData = {
				httpMethod: 'POST',
				node: node.name,
				path: node.id,
				webhookDescription: description,
				workflowId: workflow.id,
				workflowExecuteAdditionalData: additionalData,
			};
			const originalJson = res.json.bind(res);
			res.json = (body: unknown) => {
				record(res.statusCode, body);
				return originalJson(body);
			};
			try {
				const result = await nodeType.webhook!.call(
					new WebhookContext(workflow, node, additionalData, 'webhook', webhookData, [], data),
				);
				if (!result.noWebhookResponse) res.status(200).json(result.webhookResponse ?? {});
				if (!result.workflowData) return;
				handed++;
				if (resumedOnce) {
					if (!res.headersSent)
						res.status(500).json({ message: 'Another request resumed the execution first.' });
					return;
				}
				resumedOnce = true;
				const stacked = data.executionData!.nodeExecutionStack[0];
				stacked.data.main = result.workflowData;
				stacked.node.disabled = true;
				data.waitTill = undefined;
				goOn(data).then(finish, fail);
			} catch (error) {
				if (!res.headersSent) res.status(500).json({ message: (error as Error).message });
			}
		},
	);

	const first = await runWorkflow({ ...options, executionId, webhookWaitingBaseUrl: base });
	saved = structuredClone(first.run.data);
	return {
		first,
		answers,
		handed: () => handed,
		resumed,
		resumeByTime: async () => {
			resumedOnce = true;
			return await goOn(structuredClone(saved!));
		},
		close: async () => {
			server.closeAllConnections();
			await new Promise((resolve) => server.close(resolve));
		},
	};
}
