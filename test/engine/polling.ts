// Runs a polling trigger the way n8n does (n8n-core's PollContext and the node's poll()):
// activation runs a first poll, then n8n saves the workflow's static data; a scheduled poll that
// returns items saves static data and starts an execution, which n8n's WorkflowExecute runs with
// those items as the trigger's input (its execute()); one that returns nothing saves nothing.
// A restart (or deactivate/activate) loads the static data as last saved and activates again.
// Fetch Test Event runs a manual execution from the trigger, as n8n's editor does.
import { PollContext } from 'n8n-core';
// The Poll Times parameter n8n's node loader adds to every polling node (not exported from the package root).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { commonPollingParameters } = require('n8n-core/dist/nodes-loader/constants') as {
	commonPollingParameters: INodeProperties[];
};
import type {
	ICredentialDataDecryptedObject,
	IDataObject,
	INode,
	INodeExecutionData,
	INodeProperties,
	INodeType,
	NodeExecutionHint,
	WorkflowActivateMode,
	WorkflowExecuteMode,
} from 'n8n-workflow';
import { Workflow } from 'n8n-workflow';

import { additionalDataFor, binaryDataService, HarnessNodeTypes, runWorkflow } from './workflow';

export interface PolledTrigger {
	/** Activates the workflow: the first poll, then static data saved. */
	activate(): Promise<INodeExecutionData[] | null>;
	/** One scheduled poll; the items of its execution (the trigger's output) or null. Throws what the poll threw. */
	poll(): Promise<INodeExecutionData[] | null>;
	/** n8n restarted (or the workflow deactivated and activated): static data as last saved, then activation. */
	restart(): Promise<INodeExecutionData[] | null>;
	/** Fetch Test Event in the editor. */
	manual(): Promise<INodeExecutionData[] | null>;
	/** One entry per execution that ran: the trigger's output. */
	executions: INodeExecutionData[][];
	/** One entry per execution that ran: the hints the trigger showed above its output. */
	hints: NodeExecutionHint[][];
	/** The node's static data as last saved by n8n. */
	saved(): IDataObject;
}

let counter = 0;

export async function pollTrigger(options: {
	nodeType: INodeType;
	typeName: string;
	parameters: IDataObject;
	credentials: Record<string, ICredentialDataDecryptedObject>;
}): Promise<PolledTrigger> {
	await binaryDataService();
	const node: INode = {
		id: 'polling-trigger-id',
		name: 'Captioning Polling Trigger',
		type: options.typeName,
		typeVersion: 1,
		position: [0, 0],
		parameters: {
			pollTimes: { item: [{ mode: 'everyMinute' }] },
			...options.parameters,
		} as INode['parameters'],
		credentials: { captioningApi: { id: '1', name: 'Captioning account' } },
	};
	// As n8n loads a polling node: Poll Times first among its parameters.
	const nodeType = {
		...options.nodeType,
		poll: options.nodeType.poll,
		execute: options.nodeType.execute,
		description: {
			...options.nodeType.description,
			properties: [...commonPollingParameters, ...options.nodeType.description.properties],
		},
	} as INodeType;
	const nodeTypes = new HarnessNodeTypes({ [options.typeName]: nodeType });
	const workflowId = `polling-workflow-${++counter}`;
	let savedStaticData: IDataObject = {};
	const load = () =>
		new Workflow({
			id: workflowId,
			name: 'polling',
			nodes: [node],
			connections: {},
			active: true,
			nodeTypes,
			settings: {},
			staticData: JSON.parse(JSON.stringify(savedStaticData)) as IDataObject,
		});
	let workflow = load();
	const save = () =>
		(savedStaticData = JSON.parse(JSON.stringify(workflow.staticData)) as IDataObject);
	const executions: INodeExecutionData[][] = [];
	const hints: NodeExecutionHint[][] = [];

	const execution = async (input: INodeExecutionData[], mode: WorkflowExecuteMode) => {
		const run = await runWorkflow({
			nodes: [node],
			nodeTypes: { [options.typeName]: nodeType },
			credentials: options.credentials,
			input,
			mode,
			workflowId,
		});
		const error = run.error(node.name);
		if (error) throw error;
		if (mode === 'trigger')
			hints.push(run.run.data.resultData.runData[node.name]?.[0]?.hints ?? []);
		return run.output(node.name);
	};
	const run = async (mode: WorkflowExecuteMode, activation: WorkflowActivateMode) => {
		const additionalData = additionalDataFor(options.credentials, `poll-${++counter}`);
		const context = new PollContext(workflow, node, additionalData, mode, activation);
		const result = await options.nodeType.poll!.call(context);
		if (result === null) return null;
		save();
		const items = await execution(result[0], 'trigger');
		executions.push(items);
		return items;
	};
	const activate = async () => {
		const result = await run('trigger', 'activate');
		save();
		return result;
	};
	return {
		activate,
		poll: async () => await run('trigger', 'activate'),
		restart: async () => {
			workflow = load();
			return await activate();
		},
		manual: async () => await execution([{ json: {} }], 'manual'),
		executions,
		hints,
		saved: () => (savedStaticData[`node:${node.name}`] as IDataObject | undefined) ?? {},
	};
}
