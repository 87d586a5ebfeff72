// Runs workflows in-process with n8n's own execution engine (n8n-core's WorkflowExecute, real
// request helpers, real binary data service in filesystem mode), without an n8n server.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

// n8n-core reads its user folder when first loaded: give it a private one, removed when the
// process ends (its binary store holds every file a run stored: gigabytes after a bench).
if (!process.env.N8N_USER_FOLDER) {
	const folder = mkdtempSync(path.join(tmpdir(), 'n8n-harness-'));
	process.env.N8N_USER_FOLDER = folder;
	const remove = () => rmSync(folder, { recursive: true, force: true });
	// Under jest each test file has a process.env of its own (so a folder of its own): removed after the file.
	if (typeof afterAll === 'function') afterAll(remove);
	else process.once('exit', remove);
}
process.env.N8N_DEFAULT_BINARY_DATA_MODE ??= 'filesystem';
process.env.N8N_LOG_LEVEL ??= 'silent';
process.env.N8N_BINARY_DATA_SIGNING_SECRET ??= 'harness-signing-secret';

import { BinaryDataService, ExecutionLifecycleHooks, WorkflowExecute } from 'n8n-core';
import type {
	ICredentialDataDecryptedObject,
	ICredentialType,
	IDataObject,
	IExecuteContextData,
	IExecuteData,
	IHttpRequestOptions,
	INode,
	INodeCredentialsDetails,
	INodeExecutionData,
	INodeType,
	INodeTypes,
	IRun,
	IRunExecutionData,
	IVersionedNodeType,
	IWorkflowExecuteAdditionalData,
	WorkflowExecuteMode,
} from 'n8n-workflow';
import { ICredentialsHelper, Workflow } from 'n8n-workflow';
import type { Readable } from 'node:stream';

import { CaptioningApi } from '../../credentials/CaptioningApi.credentials';
import { CaptioningS3Api } from '../../credentials/CaptioningS3Api.credentials';
import { useProcessedDataStore } from './processed';

// n8n-core's own copy of the DI container (other dev tools bring another version of @n8n/di).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { Container } = require(
	require.resolve('@n8n/di', { paths: [path.dirname(require.resolve('n8n-core'))] }),
) as typeof import('@n8n/di');

const credentialTypes: Record<string, ICredentialType> = {
	captioningApi: new CaptioningApi(),
	captioningS3Api: new CaptioningS3Api(),
};

/**
 * Applies a credential type's `authenticate` the way n8n's CLI does: a function is called,
 * a generic definition has its expressions resolved against the credentials and merged in.
 */
class HarnessCredentialsHelper extends ICredentialsHelper {
	constructor(private readonly credentials: Record<string, ICredentialDataDecryptedObject>) {
		super();
	}

	getParentTypes(): string[] {
		return [];
	}

	async authenticate(
		credentials: ICredentialDataDecryptedObject,
		typeName: string,
		requestOptions: IHttpRequestOptions,
		workflow: Workflow,
		node: INode,
	): Promise<IHttpRequestOptions> {
		const type = credentialTypes[typeName];
		const authenticate = type?.authenticate;
		if (typeof authenticate === 'function') return await authenticate(credentials, requestOptions);
		if (!authenticate || authenticate.type !== 'generic') return requestOptions;
		const resolve = (value: unknown) =>
			workflow.expression.getSimpleParameterValue(
				node,
				value as string,
				'internal',
				{ $credentials: credentials },
				undefined,
				'',
			) as string;
		const out = { ...requestOptions } as IDataObject;
		for (const [outer, props] of Object.entries(authenticate.properties)) {
			const target = { ...((out[outer] as IDataObject | undefined) ?? {}) };
			for (const [k, v] of Object.entries(props as IDataObject)) target[resolve(k)] = resolve(v);
			out[outer] = target;
		}
		return out as unknown as IHttpRequestOptions;
	}

	async preAuthentication(): Promise<undefined> {
		return undefined;
	}

	async runPreAuthentication(): Promise<undefined> {
		return undefined;
	}

	async getCredentials(): Promise<never> {
		throw new Error('not used by these nodes');
	}

	async getDecrypted(
		_additionalData: IWorkflowExecuteAdditionalData,
		_nodeCredentials: INodeCredentialsDetails,
		type: string,
	): Promise<ICredentialDataDecryptedObject> {
		const data = this.credentials[type];
		if (!data) throw new Error(`No credentials of type ${type} were given to the harness`);
		return data;
	}

	async updateCredentials(): Promise<void> {}

	async updateCredentialsOauthTokenData(): Promise<void> {}

	getCredentialsProperties() {
		return [];
	}

	isCredentialUsableByNode(): boolean {
		return true;
	}
}

export class HarnessNodeTypes implements INodeTypes {
	private readonly types: Record<string, INodeType> = {};

	constructor(types: Record<string, INodeType>) {
		for (const [name, type] of Object.entries(types)) this.types[name] = type;
	}

	getByName(name: string): INodeType | IVersionedNodeType {
		return this.getByNameAndVersion(name);
	}

	getByNameAndVersion(name: string): INodeType {
		const type = this.types[name];
		if (!type) throw new Error(`Unknown node type ${name}`);
		return type;
	}

	getKnownTypes() {
		return {};
	}
}

let binaryReady: Promise<BinaryDataService> | undefined;

/** n8n's binary data service in filesystem mode, as n8n runs it by default. */
export async function binaryDataService(): Promise<BinaryDataService> {
	binaryReady ??= (async () => {
		const service = Container.get(BinaryDataService);
		await service.init();
		return service;
	})();
	return await binaryReady;
}

/** Stores bytes in n8n's binary store the way a core node (e.g. Read Files From Disk) does. */
export async function storeBinary(
	data: Buffer | Readable,
	meta: { fileName: string; mimeType: string },
	executionId = 'harness',
): Promise<INodeExecutionData['binary']> {
	const service = await binaryDataService();
	const stored = await service.store(
		{ type: 'execution', workflowId: 'harness', executionId },
		data,
		{
			data: '',
			mimeType: meta.mimeType,
			fileName: meta.fileName,
		},
	);
	return { data: stored };
}

export interface RunOptions {
	/** The workflow's nodes; the first one receives `input`. */
	nodes: INode[];
	connections?: Workflow['connectionsBySourceNode'];
	nodeTypes: Record<string, INodeType>;
	credentials?: Record<string, ICredentialDataDecryptedObject>;
	input?: INodeExecutionData[];
	mode?: WorkflowExecuteMode;
	executionId?: string;
	/** The workflow's id (what n8n's deduplication store and static data are kept under). */
	workflowId?: string;
	/** The node contexts to start with, as n8n's Retry copies them from the failed execution. */
	contextData?: IExecuteContextData;
	/** n8n's base for resume URLs ($execution.resumeUrl); http by default, as n8n without TLS. */
	webhookWaitingBaseUrl?: string;
	/** Resolves with the AbortController n8n uses to cancel the run. */
	onStart?: (cancel: () => void) => void;
	/** Goes on with a saved execution (a waiting one, as n8n resumes it) instead of starting anew. */
	resumeFrom?: IRunExecutionData;
	/**
	 * The workflow's static data as saved (n8n loads it when the execution starts). Unset: what the
	 * last production execution of `workflowId` left, and this one's is kept the same way.
	 */
	staticData?: IDataObject;
}

export interface RunResult {
	run: IRun;
	/** Output items of a node's first run (its first output unless another is named). */
	output(nodeName: string, outputIndex?: number): INodeExecutionData[];
	/** The error a node ended with, if any. */
	error(nodeName: string): Error | undefined;
	/** The node contexts at the end (what n8n saves with the execution, and a Retry copies). */
	contextData(): IExecuteContextData;
	/** The workflow's static data at the end (what n8n saves after a production execution). */
	staticData: IDataObject;
}

let executionCounter = 0;

/** Each workflow's static data as n8n saved it: after production executions, never a manual one. */
const savedStaticData = new Map<string, IDataObject>();

/** What n8n hands a node's context besides the workflow: URLs, credentials, hooks, request objects. */
export function additionalDataFor(
	credentials: Record<string, ICredentialDataDecryptedObject>,
	executionId: string,
	extra: IDataObject = {},
): IWorkflowExecuteAdditionalData {
	return {
		credentialsHelper: new HarnessCredentialsHelper(credentials),
		executionId,
		restApiUrl: 'http://127.0.0.1:5678/rest',
		instanceBaseUrl: 'http://127.0.0.1:5678/',
		formWaitingBaseUrl: 'http://127.0.0.1:5678/form-waiting',
		webhookBaseUrl: 'http://127.0.0.1:5678/webhook',
		webhookWaitingBaseUrl: 'http://127.0.0.1:5678/webhook-waiting',
		webhookTestBaseUrl: 'http://127.0.0.1:5678/webhook-test',
		currentNodeParameters: undefined,
		executionTimeoutTimestamp: undefined,
		userId: 'harness-user',
		variables: {},
		setExecutionStatus: () => {},
		sendDataToUI: () => {},
		logAiEvent: () => {},
		executeWorkflow: async () => {
			throw new Error('sub-workflows are not used by these tests');
		},
		getRunExecutionData: async () => undefined,
		startRunnerTask: async () => {
			throw new Error('code runners are not used by these tests');
		},
		externalSecretsProxy: {
			hasProvider: () => false,
			getSecret: () => undefined,
			listProviders: () => [],
			listSecrets: () => [],
		},
		...extra,
	} as unknown as IWorkflowExecuteAdditionalData;
}

/** Runs a workflow through n8n's WorkflowExecute and resolves when n8n reports it finished. */
export async function runWorkflow(options: RunOptions): Promise<RunResult> {
	await binaryDataService();
	await useProcessedDataStore();
	const executionId = options.executionId ?? `harness-${++executionCounter}`;
	const workflowId = options.workflowId ?? 'harness';
	const nodeTypes = new HarnessNodeTypes(options.nodeTypes);
	const workflow = new Workflow({
		id: workflowId,
		name: 'harness',
		nodes: options.nodes,
		connections: options.connections ?? {},
		active: false,
		nodeTypes,
		settings: {},
		staticData: structuredClone(options.staticData ?? savedStaticData.get(workflowId) ?? {}),
	});
	const hooks = new ExecutionLifecycleHooks(options.mode ?? 'manual', executionId, {
		id: workflowId,
		name: 'harness',
		active: false,
		isArchived: false,
		createdAt: new Date(),
		updatedAt: new Date(),
		nodes: options.nodes,
		connections: options.connections ?? {},
		activeVersionId: null,
	});
	let finished!: (run: IRun) => void;
	const done = new Promise<IRun>((resolve) => (finished = resolve));
	hooks.addHandler('workflowExecuteAfter', (run) => finished(run));

	const additionalData = additionalDataFor(options.credentials ?? {}, executionId, {
		hooks,
		...(options.webhookWaitingBaseUrl
			? { webhookWaitingBaseUrl: options.webhookWaitingBaseUrl }
			: {}),
	});

	const start = workflow.getStartNode() ?? options.nodes[0];
	const runExecutionData: IRunExecutionData =
		options.resumeFrom ??
		({
			startData: {},
			resultData: { runData: {} },
			executionData: {
				contextData: structuredClone(options.contextData ?? {}),
				metadata: {},
				nodeExecutionStack: [
					{
						node: start,
						data: { main: [options.input ?? [{ json: {} }]] },
						source: null,
					} as IExecuteData,
				],
				waitingExecution: {},
				waitingExecutionSource: {},
			},
		} as IRunExecutionData);

	const execute = new WorkflowExecute(additionalData, options.mode ?? 'manual', runExecutionData);
	const running = execute.processRunExecutionData(workflow);
	options.onStart?.(() => running.cancel());
	const run = await done;
	await running.catch(() => undefined);
	const staticData = JSON.parse(JSON.stringify(workflow.staticData)) as IDataObject;
	if (options.staticData === undefined && (options.mode ?? 'manual') !== 'manual')
		savedStaticData.set(workflowId, staticData);
	return {
		run,
		output(nodeName, outputIndex = 0) {
			const task = run.data.resultData.runData[nodeName]?.[0];
			return task?.data?.main?.[outputIndex] ?? [];
		},
		error(nodeName) {
			return run.data.resultData.runData[nodeName]?.[0]?.error as Error | undefined;
		},
		contextData() {
			return structuredClone(run.data.executionData?.contextData ?? {});
		},
		staticData,
	};
}

/** A node of a given type with parameters, for runWorkflow. */
export function node(
	name: string,
	type: string,
	parameters: IDataObject,
	extra: Partial<INode> = {},
): INode {
	return {
		id: `${name}-id`,
		name,
		type,
		typeVersion: 1,
		position: [0, 0],
		parameters: parameters as INode['parameters'],
		credentials: {
			captioningApi: { id: '1', name: 'Captioning account' },
			captioningS3Api: { id: '2', name: 'S3 account' },
		},
		...extra,
	};
}
