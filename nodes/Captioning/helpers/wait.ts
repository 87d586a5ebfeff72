// Waiting for a job inside the node: polls GET /jobs/{id} until completed or cancelled,
// sleeping between polls with n8n's sleep, so cancelling the execution stops the wait.
import type { IExecuteFunctions } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { apiRequest, cancelSignal, pause, segment } from '../transport';
import type { Job } from './types';

export const isFinal = (job: Job) => job.status === 'completed' || job.status === 'cancelled';

export async function pollJob(
	ctx: IExecuteFunctions,
	itemIndex: number,
	job: Job,
	intervalSeconds: number,
	timeoutMinutes: number,
): Promise<Job> {
	const deadline = Date.now() + timeoutMinutes * 60000;
	const signal = cancelSignal(ctx);
	let current = job;
	while (!isFinal(current)) {
		const left = deadline - Date.now();
		if (left <= 0) {
			const progress = current.progress === null ? '' : `, ${current.progress}% done`;
			throw new NodeOperationError(ctx.getNode(), `Job ${current.id} did not finish within ${timeoutMinutes} minutes (status ${current.status}${progress})`, {
				itemIndex,
				description: 'The job goes on at the service and is not charged again. Raise Timeout, fetch it later with Job → Get, or let a Captioning Trigger start a workflow when it completes.',
			});
		}
		await pause(Math.min(intervalSeconds * 1000, left), signal);
		current = (await apiRequest<Job>(ctx, 'GET', `/jobs/${segment(current.id)}`, { itemIndex })).body;
	}
	return current;
}
