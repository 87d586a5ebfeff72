// How a failed item leaves the node: as n8n's error classes, with its item, and (Continue On Fail)
// as an error item paired with its input.
import type { IDataObject, IExecuteFunctions, INodeExecutionData, JsonObject } from 'n8n-workflow';
import { NodeApiError, NodeOperationError } from 'n8n-workflow';

export type NodeError = NodeApiError | NodeOperationError;

/** The failure as n8n's error classes, with the item it belongs to. */
export function asNodeError(ctx: IExecuteFunctions, error: unknown, itemIndex: number): NodeError {
	// Both constructors hand back an error that already is of their class, unchanged.
	if (error instanceof NodeApiError)
		return new NodeApiError(ctx.getNode(), error as unknown as JsonObject, { itemIndex });
	return new NodeOperationError(ctx.getNode(), error as Error, { itemIndex });
}

/**
 * An error item (Continue On Fail), paired with its input: the message and what helps a workflow
 * branch (description, httpCode, code, param, requestId), never a credential. Under "Continue
 * (using error output)" they all go into one `error` object: n8n sends an item down the error
 * output only when its json holds `error` alone (1.x and 2.x; 2.x also allows message and
 * details), or when the item carries the error object, whose json n8n cuts down to the message.
 */
export function errorItem(
	ctx: IExecuteFunctions,
	error: NodeError,
	itemIndex: number,
): INodeExecutionData {
	const { code, param, requestId } = error.context as IDataObject;
	const httpCode = error instanceof NodeApiError ? error.httpCode : undefined;
	const given = { description: error.description, httpCode, code, param, requestId };
	// Only the details the error has.
	const details = Object.fromEntries(Object.entries(given).filter(([, value]) => value));
	const json: IDataObject =
		ctx.getNode().onError === 'continueErrorOutput'
			? { error: { message: error.message, ...details } }
			: { error: error.message, ...details };
	return { json, pairedItem: { item: itemIndex } };
}
