// The one item loop: dispatches each item to its operation, pairs every output with its input,
// and turns failures into error items when Continue On Fail is on.
import type { IDataObject, IExecuteFunctions, INodeExecutionData, JsonObject } from 'n8n-workflow';
import { NodeApiError, NodeOperationError } from 'n8n-workflow';

import * as account from './account';
import * as job from './job';
import * as upload from './upload';

type Operation = (this: IExecuteFunctions, itemIndex: number) => Promise<INodeExecutionData[]>;

const operations: Record<string, Record<string, Operation>> = {
	account: { get: account.get.execute },
	job: {
		create: job.create.execute,
		get: job.get.execute,
		getAll: job.getAll.execute,
		getCaptions: job.getCaptions.execute,
	},
	upload: { create: upload.create.execute },
};

/** What an error item carries: enough to branch on, never a credential. */
function errorJson(error: Error): IDataObject {
	const json: IDataObject = { error: error.message };
	if (error instanceof NodeApiError || error instanceof NodeOperationError) {
		if (error.description) json.description = error.description;
		const { code, param, requestId } = error.context as IDataObject;
		if (error instanceof NodeApiError && error.httpCode) json.httpCode = error.httpCode;
		if (code) json.code = code;
		if (param) json.param = param;
		if (requestId) json.requestId = requestId;
	}
	return json;
}

export async function router(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	const items = this.getInputData();
	const returnData: INodeExecutionData[] = [];
	for (let i = 0; i < items.length; i++) {
		const resource = this.getNodeParameter('resource', i) as string;
		const operation = this.getNodeParameter('operation', i) as string;
		const execute = operations[resource]?.[operation];
		try {
			if (!execute) {
				throw new NodeOperationError(this.getNode(), `The operation "${operation}" of resource "${resource}" is not supported`, { itemIndex: i });
			}
			const output = await execute.call(this, i);
			returnData.push(...this.helpers.constructExecutionMetaData(output, { itemData: { item: i } }));
		} catch (error) {
			if (this.continueOnFail()) {
				returnData.push({ json: errorJson(error as Error), pairedItem: { item: i } });
				continue;
			}
			// Both constructors hand back an error that already is of their class, unchanged.
			if (error instanceof NodeApiError) throw new NodeApiError(this.getNode(), error as unknown as JsonObject, { itemIndex: i });
			throw new NodeOperationError(this.getNode(), error as Error, { itemIndex: i });
		}
	}
	return [returnData];
}
