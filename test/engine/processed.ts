// n8n's deduplication store (`processed_data`, behind Remove Duplicates and
// helpers.checkProcessedAndRecord) for the in-process harness. n8n's own implementation lives in
// its CLI package and needs its database, so this keeps the same rules in memory, per workflow id
// and context ("n:<node id>" for scope node, "" for scope workflow), in mode "entries": an item is
// new once, then processed; maxEntries drops the oldest. The e2e suites run n8n's real one.
import path from 'node:path';
import type {
	DeduplicationItemTypes,
	DeduplicationScope,
	ICheckProcessedContextData,
	ICheckProcessedOptions,
	IDataDeduplicator,
} from 'n8n-workflow';

const rows = new Map<string, string[]>();
let calls = 0;
/** Records to fail, as n8n's store does where two processes insert a node's first record at once. */
let failures = 0;
/** Whether a failed record wrote first (its answer lost on the way back). */
let failAfterWriting = false;
/** How long each call takes (n8n's store is a database: its calls take macrotasks). */
let delayMs = 0;
const answerLater = async () => {
	if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
};
const rowOf = (scope: DeduplicationScope, data: ICheckProcessedContextData) =>
	`${data.workflow.id}|${scope === 'node' ? `n:${data.node?.id}` : ''}`;

class MemoryDeduplicator implements IDataDeduplicator {
	async checkProcessedAndRecord(
		items: DeduplicationItemTypes[],
		scope: DeduplicationScope,
		data: ICheckProcessedContextData,
		options: ICheckProcessedOptions,
	) {
		if (options.mode !== 'entries') throw new Error('the harness keeps mode "entries" only');
		calls += 1;
		await answerLater();
		const fail = failures > 0;
		failures = Math.max(0, failures - 1);
		if (fail && !failAfterWriting)
			throw new Error('duplicate key value violates unique constraint "PK_processed_data"');
		const row = rows.get(rowOf(scope, data)) ?? [];
		const out = { new: [] as DeduplicationItemTypes[], processed: [] as DeduplicationItemTypes[] };
		for (const item of items) {
			const value = String(item);
			if (row.includes(value)) out.processed.push(item);
			else {
				out.new.push(item);
				row.push(value);
			}
		}
		if (options.maxEntries) row.splice(0, Math.max(0, row.length - options.maxEntries));
		rows.set(rowOf(scope, data), row);
		if (fail) throw new Error('Connection terminated unexpectedly');
		return out;
	}

	async removeProcessed(
		items: DeduplicationItemTypes[],
		scope: DeduplicationScope,
		data: ICheckProcessedContextData,
	) {
		calls += 1;
		await answerLater();
		const row = rows.get(rowOf(scope, data)) ?? [];
		rows.set(
			rowOf(scope, data),
			row.filter((value) => !items.map(String).includes(value)),
		);
	}

	async clearAllProcessedItems(scope: DeduplicationScope, data: ICheckProcessedContextData) {
		rows.delete(rowOf(scope, data));
	}

	async getProcessedDataCount(scope: DeduplicationScope, data: ICheckProcessedContextData) {
		return rows.get(rowOf(scope, data))?.length ?? 0;
	}
}

let ready: Promise<void> | undefined;

/** Gives n8n-core's DataDeduplicationService the in-memory store (once per process). */
export async function useProcessedDataStore(): Promise<void> {
	ready ??= (async () => {
		// eslint-disable-next-line @typescript-eslint/no-require-imports
		const { DataDeduplicationService } = require(
			path.join(path.dirname(require.resolve('n8n-core')), 'data-deduplication-service.js'),
		) as {
			DataDeduplicationService: { init(d: IDataDeduplicator): Promise<void> };
		};
		await DataDeduplicationService.init(new MemoryDeduplicator());
	})();
	await ready;
}

/** Forgets everything recorded (a fresh n8n database). */
export function clearProcessedData(): void {
	rows.clear();
}

/** How many records a workflow's node holds. */
export function processedCount(workflowId: string, nodeId: string): number {
	return rows.get(`${workflowId}|n:${nodeId}`)?.length ?? 0;
}

/** How many times nodes have called the store (each call reads and writes a whole row in n8n). */
export function processedCalls(): number {
	return calls;
}

/** Makes every call to the store take `ms` (0: at once). */
export function setProcessedDelay(ms: number): void {
	delayMs = ms;
}

/**
 * Fails the next `n` records: writing nothing, as n8n's store (2.41.1, queue mode) fails the
 * second of two processes that insert a node's first record at the same moment, or after writing,
 * as a database connection lost before its answer.
 */
export function failNextRecords(n: number, afterWriting = false): void {
	failures = n;
	failAfterWriting = afterWriting;
}
