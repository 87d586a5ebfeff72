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

type NodeError = NodeApiError | NodeOperationError;

/** The failure as n8n's error classes, with the item it belongs to. */
export function asNodeError(ctx: IExecuteFunctions, error: unknown, itemIndex: number): NodeError {
	// Both constructors hand back an error that already is of their class, unchanged.
	if (error instanceof NodeApiError) return new NodeApiError(ctx.getNode(), error as unknown as JsonObject, { itemIndex });
	return new NodeOperationError(ctx.getNode(), error as Error, { itemIndex });
}

/**
 * An error item (Continue On Fail), paired with its input: the message and what helps a workflow
 * branch (description, httpCode, code, param, requestId), never a credential. Under "Continue
 * (using error output)" those fields go under `details`: n8n sends an item down the error output
 * only when its json holds nothing but error, message and details (or when the item carries the
 * error object, whose json n8n then cuts down to the message alone).
 */
export function errorItem(ctx: IExecuteFunctions, error: NodeError, itemIndex: number): INodeExecutionData {
	const details: IDataObject = {};
	if (error.description) details.description = error.description;
	const { code, param, requestId } = error.context as IDataObject;
	if (error instanceof NodeApiError && error.httpCode) details.httpCode = error.httpCode;
	if (code) details.code = code;
	if (param) details.param = param;
	if (requestId) details.requestId = requestId;
	const json: IDataObject =
		ctx.getNode().onError === 'continueErrorOutput' ? { error: error.message, details } : { error: error.message, ...details };
	return { json, pairedItem: { item: itemIndex } };
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
			const failure = asNodeError(this, error, i);
			if (!this.continueOnFail()) throw failure;
			returnData.push(errorItem(this, failure, i));
		}
	}
	return [returnData];
}
