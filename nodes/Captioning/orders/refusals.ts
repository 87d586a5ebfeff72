// What the service's refusal of an order, or its silence, means for the user: a 409
// idempotency_conflict in the words of the key in use, an order that got no answer (a job may
// exist), and which repeats replay the orders of a batch that stopped.
import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';
import { NodeApiError } from 'n8n-workflow';

import type { CreateJobBody } from '../model/types';
import type { Order } from './keys';
import { LOOKUP_PAGES } from './runOrders';
import { ORDER_TAG } from './keys';
import { PAGE_SIZE } from '../transport/jobs';
import { ItemOnlyError } from '../transport/errors';
import { KEY_RELIED_ON_MS } from '../transport';

/**
 * An order none of whose attempts was refused may have been placed: the error says so, and what a
 * repeat does. A keyed one is sent again with its key for a few minutes, then looked for; one
 * without a key (`unkeyed`: its body) is not sent again, and the error says how to find the job.
 */
export function mayBePlaced(error: unknown, unkeyed?: CreateJobBody): unknown {
	if (!(error instanceof NodeApiError)) return error;
	const unknown =
		'No answer said the order was placed or refused, so a job may exist and be charged.';
	if (!unkeyed) {
		error.description =
			`${error.description ?? ''} ${unknown} A repeat within ${KEY_RELIED_ON_MS / 60000} minutes sends it again with the same key, which the service replays if it was placed; a later one looks for the job first, and never pays twice.`.trim();
		return error;
	}
	const named = [
		unkeyed.title ? `the title "${unkeyed.title}"` : '',
		unkeyed.metadata && Object.keys(unkeyed.metadata).length > 0
			? `the metadata ${JSON.stringify(unkeyed.metadata)}`
			: '',
	].filter(Boolean);
	error.description = `${unknown} With Idempotency None the node does not send it again (that could pay twice). Find it with Job → Get Many (the newest jobs${named.length > 0 ? `, with ${named.join(' and ')}` : ''}) before ordering again, or set Idempotency to Automatic, which makes a repeat safe.`;
	return error;
}

export function isConflict(error: unknown): error is NodeApiError {
	return (
		error instanceof NodeApiError && (error.context as IDataObject).code === 'idempotency_conflict'
	);
}

/** How to order again on purpose, for the key in use. */
const orderAgain =
	'To order it again on purpose, set Idempotency to Custom Key with a key not used before (e.g. its file ID followed by -v2).';

/**
 * A repeat whose earlier order is not settled: this node may have placed it (its mark is in n8n's
 * deduplication store), but no record names its job and it is not among the newest jobs read, so
 * the node cannot tell, and does not order again (the service keeps an Idempotency-Key only for a
 * while). It stops this item alone.
 */
export function notFound(ctx: IExecuteFunctions, i: number, named: string, tag: string): never {
	throw new ItemOnlyError(
		ctx.getNode(),
		`The order ${named} may have been placed before, and was not found`,
		{
			itemIndex: i,
			description: `This node sent this order before (${ORDER_TAG} ${tag}), but did not learn its job, and no job with that tag is among the newest ${LOOKUP_PAGES * PAGE_SIZE} jobs of the workspace. Nothing was ordered now, so nothing was charged twice. Look for the job with Job → Get Many (Filters → Metadata Key ${ORDER_TAG}, Metadata Value ${tag}, Return All). ${orderAgain}`,
		},
	);
}

/**
 * A 409 idempotency_conflict says what was different, and what to do, for the key in use: a Custom
 * Key used for another order; with Automatic, an earlier order of this node that the lookup did
 * not find.
 */
export function explainConflict(error: unknown, media: string, customKey?: string): unknown {
	if (!isConflict(error)) return error;
	error.description =
		customKey !== undefined
			? `The Idempotency Key "${customKey}" was used before for a different order than ${media} with these options (or by another workflow). A key names one order: use one per media (e.g. its Drive file ID or S3 ETag), or put a version in it (…-v2) to order again on purpose. Nothing was ordered twice.`
			: `This node ordered ${media} before, but that job is not among the newest ${LOOKUP_PAGES * PAGE_SIZE} jobs, so the service refused a second order: nothing was ordered twice. Find the first job with Job → Get Many. ${orderAgain}`;
	return error;
}

/** Which repeats of an order replay it rather than pay again, as a stopped batch's error says it. */
const REPLAYS: Record<Order['idempotency'], string> = {
	auto: "Retry On Fail, the execution's Retry and a new run replay these orders instead of paying for them again.",
	custom:
		"With a Custom Key, every repeat (Retry On Fail, the execution's Retry, a new run) replays these orders instead of paying for them again.",
	none: "With Idempotency None, Retry On Fail and the execution's Retry read these jobs back, but a new run (or the Retry of a crashed execution) orders and pays again.",
};

export const replaysOf = (order: Order): string => REPLAYS[order.idempotency];
