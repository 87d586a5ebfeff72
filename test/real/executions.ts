// What the e2e suites ask of a running n8n about its executions: list them, wait for one, read
// one's run data, call a production webhook, activate imported workflows (1.x), all as the owner.
import path from 'node:path';

import type { N8n } from './instance';

export type Item = { json: Record<string, unknown>; pairedItem?: unknown };
export type RunData = Record<
	string,
	Array<{
		data?: { main?: Array<Item[] | null> };
		error?: { message?: string; description?: string };
	}>
>;
export interface Execution {
	id: string;
	status: string;
	mode?: string;
	retryOf?: string | null;
	startedAt?: string;
}

/** `n8n` is read at each call: the suites create their instance in beforeAll. */
export function executionsApi(n8n: () => N8n) {
	const executions = async (workflowId: string): Promise<Execution[]> => {
		const res = await n8n().rest<{ results?: Execution[] } | Execution[]>(
			'GET',
			`/executions?filter=${encodeURIComponent(JSON.stringify({ workflowId }))}`,
		);
		return Array.isArray(res.body) ? res.body : (res.body.results ?? []);
	};
	const waitFor = async <T>(
		what: string,
		probe: () => Promise<T | undefined>,
		ms = 120000,
	): Promise<T> => {
		const deadline = Date.now() + ms;
		for (;;) {
			const value = await probe();
			if (value !== undefined) return value;
			if (Date.now() > deadline)
				throw new Error(
					`timed out waiting for ${what}; n8n's last lines:\n${n8n().log().slice(-3000)}`,
				);
			await new Promise((r) => setTimeout(r, 500));
		}
	};
	/**
	 * The newest execution's id (any workflow), 0 when there is none: ids count up. The largest of
	 * a page, not its first: n8n 2.x lists the executions still new or running first (one a kill
	 * left running is older than the ones after it), then the rest by start.
	 */
	const newestId = async (): Promise<number> => {
		const res = await n8n().rest<{ results?: Execution[] }>('GET', '/executions?limit=100');
		return Math.max(0, ...(res.body.results ?? []).map((e) => Number(e.id)));
	};
	return {
		executions,
		waitFor,
		/**
		 * What n8n saved of an execution's data (run data, the stack, node contexts), as text: not the
		 * workflow's own parameters, which n8n stores beside it.
		 */
		async savedDataOf(id: string): Promise<string> {
			// eslint-disable-next-line @typescript-eslint/no-require-imports
			const flatted = require(path.join(n8n().install.dir, 'node_modules', 'flatted')) as {
				parse(text: string): unknown;
			};
			const res = await n8n().rest<{ data: string | object }>('GET', `/executions/${id}`);
			const data = typeof res.body.data === 'string' ? flatted.parse(res.body.data) : res.body.data;
			return JSON.stringify(data);
		},
		/** The errors of a workflow's failed executions, each as "<node>: <message> (<description>)". */
		async errorsOf(workflowId: string): Promise<string[]> {
			const failed = (await executions(workflowId)).filter((e) => e.status === 'error');
			const errors: string[] = [];
			for (const { id } of failed)
				for (const [node, runs] of Object.entries(await this.runDataOf(id)))
					for (const { error } of runs)
						if (error) errors.push(`${node}: ${error.message} (${error.description ?? ''})`);
			return errors;
		},
		/** An execution's run data as n8n stores it (flatted in the REST answer). */
		async runDataOf(id: string): Promise<RunData> {
			// eslint-disable-next-line @typescript-eslint/no-require-imports
			const flatted = require(path.join(n8n().install.dir, 'node_modules', 'flatted')) as {
				parse(text: string): unknown;
			};
			const res = await n8n().rest<{ data: string | { resultData: { runData: RunData } } }>(
				'GET',
				`/executions/${id}`,
			);
			const data =
				typeof res.body.data === 'string'
					? (flatted.parse(res.body.data) as { resultData: { runData: RunData } })
					: res.body.data;
			return data.resultData.runData;
		},
		/**
		 * Waits until no execution of the workflow runs; returns those n8n left for good, once unchanged
		 * for 5 s: "new" ones (n8n killed between storing an execution and starting it leaves it so, its
		 * event not yet answered, and never recovers it) and, with `killedAt`, "running" ones started
		 * before the kill (seen once in 2.41.1, CONTRIBUTING "n8n's faults": its startup recovery
		 * amends no execution whose logged events name no node yet, and the status stays "running").
		 */
		async untilEnded(workflowId: string, ms = 180000, killedAt?: number): Promise<Execution[]> {
			let seen = { key: '', at: 0, list: [] as Execution[] };
			const probe = async () => {
				const res = await n8n().rest<{ results?: Execution[] }>(
					'GET',
					`/executions?limit=100&filter=${encodeURIComponent(JSON.stringify({ workflowId, status: ['new', 'running'] }))}`,
				);
				const list = res.body.results ?? [];
				const key = list.map((e) => `${e.id}:${e.status}`).join(',');
				if (key !== seen.key) seen = { key, at: Date.now(), list };
				const left = (e: Execution) =>
					e.status === 'new' ||
					(killedAt !== undefined && Date.parse(e.startedAt ?? '') < killedAt);
				if (!list.every(left)) return undefined;
				return Date.now() - seen.at >= 5000 ? list : undefined;
			};
			try {
				return await waitFor('every execution to end', probe, ms);
			} catch (error) {
				const lingering = seen.list.map((e) => `${e.id} ${e.status} since ${e.startedAt}`);
				// n8n's own words too: a socket that closed or was refused means its process ended.
				throw new Error(
					`${(error as Error).message}\nstill listed: ${lingering.join('; ')}\nn8n's log ends:\n${n8n().log().slice(-3000)}`,
				);
			}
		},
		newestId,
		/**
		 * The executions of a workflow after the execution `afterId`, each with the job ids its node
		 * `nodeName` holds: its output, or (an execution that crashed before the node ended) its input
		 * as n8n stored it, waiting on the execution stack. Read one by one: n8n's list comes 100 at
		 * most a page, and 1.x and 2.x page it differently.
		 */
		async jobsByExecution(
			workflowId: string,
			nodeName: string,
			afterId: number,
		): Promise<Array<Execution & { jobs: string[] }>> {
			// eslint-disable-next-line @typescript-eslint/no-require-imports
			const flatted = require(path.join(n8n().install.dir, 'node_modules', 'flatted')) as {
				parse(text: string): unknown;
			};
			type Stored = {
				resultData: { runData: RunData };
				executionData?: {
					nodeExecutionStack?: Array<{
						node: { name: string };
						data: { main?: Array<Item[] | null> };
					}>;
				};
			};
			const found: Array<Execution & { jobs: string[] }> = [];
			// Ids count up to the newest listed, and on while any of the next twenty is this workflow's
			// (other workflows' executions may still be coming): n8n answers an id it does not have 200
			// with nothing (or 404), and one it has but cannot read 500 (1.122.5, an execution killed
			// before its data was stored; there may be many in a row).
			const newest = await newestId();
			for (let id = afterId + 1, missing = 0; id <= newest || missing < 20; id++) {
				if (id > newest + 1000) throw new Error(`no end to the executions after ${newest}`);
				const res = await n8n().rest<
					(Execution & { workflowId: string; data: string | Stored }) | null
				>('GET', `/executions/${id}`);
				const there =
					res.status === 200 &&
					typeof res.body === 'object' &&
					res.body !== null &&
					String(res.body.id) === String(id);
				const ours = there && res.body!.workflowId === workflowId;
				missing = ours || res.status >= 500 ? 0 : missing + 1;
				if (!ours) continue;
				const data =
					typeof res.body!.data === 'string'
						? (flatted.parse(res.body!.data) as Stored)
						: res.body!.data;
				// A crashed execution's output is n8n's placeholder ({ isArtificialRecoveredEventItem }): its job is on the stack.
				const output = data?.resultData?.runData?.[nodeName]?.[0]?.data?.main?.[0] ?? [];
				const input =
					data?.executionData?.nodeExecutionStack?.find((entry) => entry.node.name === nodeName)
						?.data.main?.[0] ?? [];
				const jobs = [...output, ...input]
					.filter((item) => item?.json?.object === 'job')
					.map((item) => String(item.json.id));
				found.push({ id: String(id), status: res.body!.status, jobs: [...new Set(jobs)] });
			}
			return found;
		},
		/** POSTs to a production webhook; 2.x registers them in the background after it answers, so a 404 is tried again. */
		async call(hook: string, body: unknown = {}): Promise<number> {
			return await waitFor(`the webhook ${hook}`, async () => {
				const res = await n8n().post(`/webhook/${hook}`, body);
				return res.status === 404 ? undefined : res.status;
			});
		},
		/**
		 * Activates imported workflows through the REST API, as the editor does (a CLI run per
		 * workflow boots n8n's CLI each time). 2.x: publish its current version. 1.x: a CLI import
		 * writes no workflow_history row, which activation needs; a REST save writes it.
		 */
		async activate(ids: string[]): Promise<void> {
			if (n8n().install.version.startsWith('2.')) {
				for (const id of ids) {
					const wf = await n8n().rest<{ versionId: string }>('GET', `/workflows/${id}`);
					const res = await n8n().rest('POST', `/workflows/${id}/activate`, {
						versionId: wf.body.versionId,
					});
					if (res.status !== 200)
						throw new Error(`publishing ${id} failed: ${JSON.stringify(res.body).slice(0, 500)}`);
				}
				return;
			}
			type Wf = {
				versionId: string;
				nodes: unknown[];
				connections: unknown;
				name: string;
				settings: unknown;
			};
			for (const id of ids) {
				const wf = await n8n().rest<Wf>('GET', `/workflows/${id}`);
				const saved = await n8n().rest<Wf>('PATCH', `/workflows/${id}`, {
					name: wf.body.name,
					nodes: wf.body.nodes,
					connections: wf.body.connections,
					settings: wf.body.settings,
					versionId: wf.body.versionId,
				});
				const res = await n8n().rest('PATCH', `/workflows/${id}`, {
					active: true,
					versionId: saved.body.versionId,
				});
				if (res.status !== 200)
					throw new Error(`activation of ${id} failed: ${JSON.stringify(res.body).slice(0, 500)}`);
			}
		},
	};
}
