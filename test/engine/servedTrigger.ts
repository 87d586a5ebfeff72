// Serves a trigger node's webhook over HTTPS the way n8n 2.x's webhook server does: express parses
// the request, n8n-core's WebhookContext wraps it, the node's webhook() decides whether an execution
// starts; an execution is stored (recorded, and static data saved) before n8n answers (200, no body:
// responseData noData), then runs through n8n's WorkflowExecute, where the trigger's execute() gets
// what webhook() emitted, with the static data as saved then (saved again when it ends). (The e2e
// suite runs the same trigger in real n8n.)
import express from 'express';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { HookContext, WebhookContext } from 'n8n-core';
import type {
	ICredentialDataDecryptedObject,
	IDataObject,
	INode,
	INodeExecutionData,
	INodeType,
	IWebhookData,
	IWebhookDescription,
} from 'n8n-workflow';
import { Workflow } from 'n8n-workflow';

import { tlsPair } from '../helpers/https';
import { additionalDataFor, binaryDataService, HarnessNodeTypes, runWorkflow } from './workflow';

export interface ServedTrigger {
	/** The production URL of the trigger, as n8n shows it. */
	url: string;
	/** One entry per execution that ran: the trigger's output (after its execute()). */
	executions: INodeExecutionData[][];
	/** One entry per execution stored: what webhook() emitted (the execution's input). */
	stored: INodeExecutionData[][];
	/** The errors executions ended with (the trigger's execute() failed). */
	failed: Error[];
	/** Makes n8n fail to store the next `n` executions (a database error): answered 500, nothing runs. */
	failStores(n: number): void;
	/**
	 * Holds every execution stored from now on before it starts and before n8n answers its delivery,
	 * as n8n 2.x does while it waits for a slot under a production concurrency limit. Returns what
	 * lets them go.
	 */
	holdSlots(): () => void;
	/** Runs a stored execution again, as n8n 2.x runs the executions it stored and did not start at its restart. */
	runStoredAgain(index: number): Promise<INodeExecutionData[]>;
	/** Deactivates the workflow as n8n does: the node's webhook method `delete`. */
	deactivate(): Promise<void>;
	/** The node's static data, as n8n keeps it between deliveries. */
	staticData(): IDataObject;
	/** Cancels the n-th execution started (0: the first), as n8n's Stop button does. */
	cancel(n: number): void;
	/** Changes the Captioning API credential's fields, as a user edits the credential while the workflow is active. */
	editCredentials(fields: IDataObject): void;
	/** Replaces the node's saved static data (e.g. as an earlier version of the node left it). */
	setStaticData(data: IDataObject): void;
	/**
	 * Resolves once every request received so far has been handled to its end: the trigger answers
	 * before it downloads captions, and n8n starts the execution once webhook() returns.
	 */
	idle(): Promise<void>;
	close(): Promise<void>;
}

let served = 0;

export async function serveTrigger(options: {
	nodeType: INodeType;
	typeName: string;
	parameters: IDataObject;
	credentials: Record<string, ICredentialDataDecryptedObject>;
	/** Other node types the execution may need (none: the trigger alone). */
	nodeTypes?: Record<string, INodeType>;
}): Promise<ServedTrigger> {
	await binaryDataService();
	const node: INode = {
		id: 'trigger-id',
		name: 'Captioning Trigger',
		type: options.typeName,
		typeVersion: Math.max(...([] as number[]).concat(options.nodeType.description.version)),
		position: [0, 0],
		webhookId: 'f2a8c1d4-3b5e-4f6a-9c7d-8e9f0a1b2c3d',
		parameters: options.parameters as INode['parameters'],
		credentials: { captioningApi: { id: '1', name: 'Captioning account' } },
	};
	const nodeTypes = new HarnessNodeTypes({ [options.typeName]: options.nodeType });
	// Each served trigger is a workflow of its own, as each test's would be in n8n.
	const workflowId = `trigger-workflow-${++served}`;
	// As n8n does: each request loads the workflow, with a copy of its saved static data, and the
	// data is saved back only after an execution it started (so two concurrent requests both see
	// the data as it was before either).
	let savedStaticData: IDataObject = {};
	const loadWorkflow = () =>
		new Workflow({
			id: workflowId,
			name: 'trigger',
			nodes: [node],
			connections: {},
			active: true,
			nodeTypes,
			settings: {},
			staticData: structuredClone(savedStaticData),
		});
	const description = options.nodeType.description.webhooks![0] as IWebhookDescription;
	/** The trigger's webhook as n8n registers it, with these additional data. */
	const webhookDataOf = (additionalData: IWebhookData['workflowExecuteAdditionalData']) =>
		({
			httpMethod: 'POST',
			node: node.name,
			path: String(description.path),
			webhookDescription: description,
			workflowId,
			workflowExecuteAdditionalData: additionalData,
			webhookId: node.webhookId,
		}) as IWebhookData;
	const executions: INodeExecutionData[][] = [];
	const stored: INodeExecutionData[][] = [];
	const failed: Error[] = [];
	let storesToFail = 0;
	let slot: Promise<void> | undefined;
	let counter = 0;
	const handling = new Set<Promise<void>>();
	const cancels: Array<() => void> = [];

	/** Runs an execution of the stored input, as n8n does once it has stored it. */
	async function execute(input: INodeExecutionData[]): Promise<INodeExecutionData[] | undefined> {
		const execution = await runWorkflow({
			nodes: [node],
			nodeTypes: options.nodeTypes ?? { [options.typeName]: options.nodeType },
			credentials: options.credentials,
			input,
			mode: 'webhook',
			workflowId,
			staticData: savedStaticData,
			onStart: (cancel) => cancels.push(cancel),
		});
		// n8n saves the static data an execution changed when it ends (the whole of it: last writer wins).
		savedStaticData = execution.staticData;
		const error = execution.error(node.name);
		if (error) failed.push(error);
		else executions.push(execution.output(node.name));
		return error ? undefined : execution.output(node.name);
	}

	const app = express();
	app.post(
		`/webhook/${node.webhookId}/${String(description.path)}`,
		express.json({ limit: '16mb' }),
		async (req, res) => {
			const additionalData = additionalDataFor(options.credentials, `webhook-${++counter}`, {
				httpRequest: req,
				httpResponse: res,
			});
			const webhookData = webhookDataOf(additionalData);
			const workflow = loadWorkflow();
			const context = new WebhookContext(
				workflow,
				node,
				additionalData,
				'webhook',
				webhookData,
				[],
				null,
			);
			let handled!: () => void;
			const handlingThis = new Promise<void>((resolve) => (handled = resolve));
			handling.add(handlingThis);
			try {
				const result = await options.nodeType.webhook!.call(context);
				if (result.workflowData && !result.noWebhookResponse) {
					if (storesToFail > 0) {
						storesToFail -= 1;
						throw new Error('Database is not ready!');
					}
					stored.push(result.workflowData[0]);
					savedStaticData = JSON.parse(JSON.stringify(workflow.staticData)) as IDataObject;
					// Under a concurrency limit, n8n answers once the execution has its slot (the sender may be gone).
					await slot;
					res.status(200).end();
					await execute(result.workflowData[0]);
				} else {
					if (!result.noWebhookResponse)
						res.status(200).json(result.webhookResponse ?? { message: 'Webhook call received' });
					// Static data changed by a delivery that starts nothing is saved too.
					savedStaticData = JSON.parse(JSON.stringify(workflow.staticData)) as IDataObject;
				}
			} catch (error) {
				if (!res.headersSent) res.status(500).json({ message: (error as Error).message });
			} finally {
				handling.delete(handlingThis);
				handled();
			}
		},
	);
	/** The node's webhook method `kind` in a HookContext, as n8n calls it on (de)activation. */
	const hook = async (kind: 'create' | 'delete', activation: 'activate' | 'update') => {
		const additionalData = additionalDataFor(options.credentials, activation);
		const webhookData = webhookDataOf(additionalData);
		const workflow = loadWorkflow();
		const context = new HookContext(
			workflow,
			node,
			additionalData,
			'trigger',
			activation,
			webhookData,
		);
		await options.nodeType.webhookMethods?.default?.[kind]?.call(context);
		// n8n saves the static data once the webhooks are added (ActiveWorkflowManager.addWebhooks).
		savedStaticData = JSON.parse(JSON.stringify(workflow.staticData)) as IDataObject;
	};
	// Activation, as n8n activates the workflow: checkExists is false, so `create` runs.
	await hook('create', 'activate');
	const { key, cert } = tlsPair();
	const server = createServer({ key, cert }, app);
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	const { port } = server.address() as AddressInfo;
	return {
		url: `https://127.0.0.1:${port}/webhook/${node.webhookId}/${String(description.path)}`,
		executions,
		stored,
		failed,
		failStores: (n) => (storesToFail = n),
		holdSlots: () => {
			let release!: () => void;
			slot = new Promise<void>((resolve) => (release = resolve));
			return () => {
				slot = undefined;
				release();
			};
		},
		runStoredAgain: async (index) => (await execute(stored[index])) ?? [],
		deactivate: async () => await hook('delete', 'update'),
		cancel: (n) => cancels[n](),
		editCredentials: (fields) => Object.assign(options.credentials.captioningApi, fields),
		staticData: () => (savedStaticData[`node:${node.name}`] as IDataObject | undefined) ?? {},
		setStaticData: (data) => {
			savedStaticData = { ...savedStaticData, [`node:${node.name}`]: data };
		},
		idle: async () => {
			while (handling.size > 0) await Promise.all([...handling]);
		},
		close: async () => {
			while (handling.size > 0) await Promise.all([...handling]);
			server.closeAllConnections();
			await new Promise((resolve) => server.close(resolve));
		},
	};
}
