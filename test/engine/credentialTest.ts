// The Test button of a credential with a declarative `test`, pressed the way n8n's CredentialsTester
// (n8n CLI, services/credentials-tester.service) does: `test.request` runs as the routing request of
// a temporary node with n8n-core's RoutingNode, which applies the credential's `authenticate`; an
// error answer is matched against the `responseCode` rules, a success against `responseSuccessBody`.
import { ExecuteContext, RoutingNode } from 'n8n-core';
import type {
	ICredentialDataDecryptedObject,
	ICredentialType,
	IDataObject,
	IExecuteData,
	INode,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
	IRunExecutionData,
} from 'n8n-workflow';
import { Workflow } from 'n8n-workflow';

import { additionalDataFor, HarnessNodeTypes } from './workflow';

export interface TestResult {
	status: 'OK' | 'Error';
	message: string;
}

function tempNode(credential: ICredentialType): INodeType {
	return {
		description: {
			displayName: 'Temp',
			name: 'temp',
			group: ['transform'],
			version: 1,
			description: '',
			defaults: { name: 'Temp' },
			inputs: ['main'],
			outputs: ['main'],
			credentials: [{ name: credential.name, required: true }],
			properties: [
				{
					displayName: 'Temp',
					name: 'temp',
					type: 'string',
					routing: { request: credential.test!.request },
					default: '',
				},
			],
		} as unknown as INodeTypeDescription,
	};
}

const valueAt = (data: IDataObject, path: string) =>
	path
		.split('.')
		.reduce<unknown>(
			(v, k) => (v && typeof v === 'object' ? (v as IDataObject)[k] : undefined),
			data,
		);

type TestError = Error & {
	cause?: { code?: string; response?: { status: number; statusText?: string } };
};

/** The tester's verdict on an error thrown by the request. */
function verdictOnError(credential: ICredentialType, error: TestError): TestResult {
	const response = error.cause?.response;
	if (response) {
		for (const rule of credential.test?.rules ?? []) {
			if (rule.type === 'responseCode' && rule.properties.value === response.status)
				return { status: 'Error', message: rule.properties.message };
		}
		return {
			status: 'Error',
			message: response.statusText || `Received HTTP status code: ${response.status}`,
		};
	}
	return { status: 'Error', message: error.cause?.code ?? error.message };
}

/** What the Test button shows for these credential fields. */
export async function pressTest(
	credential: ICredentialType,
	data: ICredentialDataDecryptedObject,
): Promise<TestResult> {
	const node: INode = {
		id: 'temp',
		name: 'Temp-Node',
		type: 'temp',
		typeVersion: 1,
		position: [0, 0],
		parameters: {},
		credentials: { [credential.name]: { id: '1', name: 'Tested' } },
	};
	const nodeType = tempNode(credential);
	const workflow = new Workflow({
		nodes: [node],
		connections: {},
		active: false,
		nodeTypes: new HarnessNodeTypes({ temp: nodeType }),
	});
	const context = new ExecuteContext(
		workflow,
		node,
		additionalDataFor({ [credential.name]: data }, 'credential-test'),
		'internal',
		{ resultData: { runData: {} } } as IRunExecutionData,
		0,
		[],
		{ main: [[{ json: {} }]] },
		{ node, data: {}, source: null } as IExecuteData,
		[],
	);
	let response: INodeExecutionData[][] | null | undefined;
	try {
		response = await new RoutingNode(context, nodeType, {
			id: '1',
			name: 'Tested',
			type: credential.name,
			data,
		}).runNode();
	} catch (error) {
		return verdictOnError(credential, error as TestError);
	}
	const json = response?.[0]?.[0]?.json ?? {};
	for (const rule of credential.test?.rules ?? []) {
		if (
			rule.type === 'responseSuccessBody' &&
			valueAt(json, rule.properties.key) === rule.properties.value
		)
			return { status: 'Error', message: rule.properties.message };
	}
	return { status: 'OK', message: 'Connection successful!' };
}
