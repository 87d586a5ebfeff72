// The Captioning Trigger behind n8n's production concurrency limit, in real n8n over HTTPS
// (npm run test:e2e): N8N_CONCURRENCY_PRODUCTION_LIMIT=1 and a workflow of 3 s (a Wait after the
// trigger). n8n 2.x answers a delivery only once its execution has a slot, minutes under a burst,
// long after the sender (10 s) gave up; 1.x answers before. Either way each job runs once: every
// copy of an event is stored, and the run of a job's news already reported goes no further.
// Then n8n is killed while executions wait for their slot (their tries never answered):
// after the restart every job still runs (n8n starts the executions it stored and did not start;
// the service's redeliveries may start one beside it: those jobs' 2xx never reached the sender).
// Versions: N8N_E2E_VERSIONS (default 2.41.1 and 1.122.5).
import { tlsPair } from '../helpers/https';
import type { Sandbox } from '../helpers/sandbox';
import { createSandbox } from '../helpers/sandbox';
import { executionsApi } from '../real/executions';
import type { N8n } from '../real/instance';
import { createN8n, installN8n, tempJson } from '../real/instance';

const VERSIONS = (process.env.N8N_E2E_VERSIONS ?? '2.41.1,1.122.5').split(',').filter(Boolean);
const WORKFLOW = 'wfSlotLimited01';
const CREDENTIAL = 'captioningSlotLimited';
const WEBHOOK_ID = '3c8d1e2f-5a6b-4c7d-8e9f-0a1b2c3d4e5f';
/** A size a 2-core machine runs in a few minutes behind a limit of 1 (each run takes 3 s). */
const EVENTS = 12;

function slowWorkflow() {
	return {
		id: WORKFLOW,
		name: 'Captioning Trigger, then 3 s of work',
		versionId: `${WORKFLOW}-v1`,
		active: false,
		settings: { executionOrder: 'v1' },
		nodes: [
			{
				id: 'slot-trigger',
				name: 'Job Event',
				type: 'n8n-nodes-captioning.captioningTrigger',
				typeVersion: 2,
				position: [0, 0],
				webhookId: WEBHOOK_ID,
				parameters: { events: ['job.completed'], verify: true },
				credentials: { captioningApi: { id: CREDENTIAL, name: CREDENTIAL } },
			},
			{
				id: 'slot-wait',
				name: 'Work',
				type: 'n8n-nodes-base.wait',
				typeVersion: 1.1,
				position: [220, 0],
				parameters: { resume: 'timeInterval', amount: 3, unit: 'seconds' },
			},
		],
		connections: {
			'Job Event': { main: [[{ node: 'Work', type: 'main', index: 0 }]] },
		},
	};
}

/** The credentials' Webhook Secret Token, as the README sets the trigger up. */
const TOKEN = 'slot-token';

describe.each(VERSIONS)('n8n %s with a production concurrency limit of 1', (version) => {
	let n8n: N8n;
	let sb: Sandbox;
	const { waitFor, newestId, jobsByExecution, activate, untilEnded } = executionsApi(() => n8n);
	const url = () => `${n8n.url}/webhook/${WEBHOOK_ID}/captioning?token=${TOKEN}`;

	async function order(count: number, label: string): Promise<string[]> {
		const ids: string[] = [];
		for (let n = 0; n < count; n++) {
			const res = await fetch(`${sb.baseUrl}/jobs`, {
				method: 'POST',
				headers: {
					authorization: `Bearer ${sb.keys.otherWorkspace}`,
					'content-type': 'application/json',
				},
				body: JSON.stringify({
					media_url: `https://media.example.com/${label}-${n}.mp4`,
					webhook_url: url(),
				}),
			});
			ids.push(((await res.json()) as { id: string }).id);
		}
		return ids;
	}

	/** Jobs by how many successful executions ran them (the trigger's output holds the job). */
	async function runsByJob(since: number): Promise<Map<string, number>> {
		const runs = new Map<string, number>();
		for (const e of await jobsByExecution(WORKFLOW, 'Job Event', since))
			if (e.status === 'success') for (const job of e.jobs) runs.set(job, (runs.get(job) ?? 0) + 1);
		return runs;
	}

	beforeAll(
		async () => {
			sb = await createSandbox({ timing: null, webhook: { ca: tlsPair().cert } });
			n8n = await createN8n(await installN8n(version), [], {
				N8N_CONCURRENCY_PRODUCTION_LIMIT: '1',
			});
			await n8n.cli([
				'import:credentials',
				`--input=${tempJson('slot-credentials.json', [{ id: CREDENTIAL, name: CREDENTIAL, type: 'captioningApi', data: { apiKey: sb.keys.otherWorkspace, baseUrl: sb.baseUrl, webhookToken: TOKEN } }])}`,
			]);
			await n8n.cli(['import:workflow', `--input=${tempJson('slot.json', slowWorkflow())}`]);
			await n8n.start();
			await activate([WORKFLOW]);
			await waitFor('the trigger', async () =>
				(await n8n.post(`/webhook/${WEBHOOK_ID}/captioning?token=${TOKEN}`, {})).status === 400
					? true
					: undefined,
			);
		},
		40 * 60 * 1000,
	);

	afterAll(async () => {
		await n8n?.stop();
		await sb?.close();
	});

	test(`${EVENTS} completions within 2 s, each delivered twice: one run per job`, async () => {
		const ids = await order(EVENTS, 'slot');
		const since = await newestId();
		sb.resetLedger();
		sb.setWebhook({ duplicate: true });
		try {
			for (const id of ids) {
				sb.completeJob(id);
				await new Promise((r) => setTimeout(r, 2000 / EVENTS));
			}
			await sb.settleDeliveries();
			await waitFor(
				`${EVENTS} executions`,
				async () => ((await runsByJob(since)).size === EVENTS ? true : undefined),
				(EVENTS * 3 + 120) * 1000,
			);
			await untilEnded(WORKFLOW);
		} finally {
			sb.setWebhook({ duplicate: false, attempts: 1 });
		}
		const runs = await runsByJob(since);
		const all = await jobsByExecution(WORKFLOW, 'Job Event', since);
		const statuses = sb.ledger.deliveries.reduce<Record<string, number>>((acc, d) => {
			const key = String(d.status ?? d.error);
			return { ...acc, [key]: (acc[key] ?? 0) + 1 };
		}, {});
		const slowest = Math.max(...sb.ledger.deliveries.map((d) => d.ms ?? 0));
		console.log(
			`n8n ${version}, concurrency limit 1, ${EVENTS} events × 2: ${all.length} executions, jobs run ${[...runs.values()].join('')}; answers ${JSON.stringify(statuses)}; slowest answer ${slowest} ms`,
		);
		expect([...runs.keys()].sort()).toEqual([...ids].sort());
		expect([...runs.values()].every((n) => n === 1)).toBe(true);
		expect(all).toHaveLength(2 * EVENTS);
	}, 900000);

	test('n8n killed while executions wait for their slot (their tries never answered): after the restart every job runs, twice only where no 2xx reached the sender', async () => {
		const ids = await order(10, 'slot-killed');
		const since = await newestId();
		sb.resetLedger();
		sb.setWebhook({ duplicate: false, attempts: 30 });
		try {
			for (const id of ids) sb.completeJob(id);
			// Stored, all of them; the first few run (3 s each), the others wait for the slot.
			await waitFor(
				'every execution stored',
				async () =>
					(await jobsByExecution(WORKFLOW, 'Job Event', since)).length >= ids.length
						? true
						: undefined,
				120000,
			);
			const killedAt = Date.now();
			await n8n.kill();
			await n8n.start();
			await sb.settleDeliveries();
			// Every job runs, or is held by the execution that ran it when n8n was killed (crashed, its
			// event answered: its Retry runs it, as for n8n's own Webhook node).
			const held = async () => {
				const all = await jobsByExecution(WORKFLOW, 'Job Event', since);
				const jobs = (status: string) =>
					new Set(all.filter((e) => e.status === status).flatMap((e) => e.jobs));
				return { ran: jobs('success'), crashed: jobs('crashed'), all };
			};
			await waitFor(
				'every job run or held by a crashed execution',
				async () => {
					const { ran, crashed } = await held();
					return ids.every((id) => ran.has(id) || crashed.has(id)) ? true : undefined;
				},
				300000,
			);
			await untilEnded(WORKFLOW);
			const { ran, crashed, all } = await held();
			const runs = await runsByJob(since);
			const answeredBefore = new Set(
				sb.ledger.deliveries
					.filter((d) => d.status === 200 && d.at + (d.ms ?? 0) < killedAt)
					.map((d) => d.jobId),
			);
			const twice = [...runs].filter(([, n]) => n > 1).map(([job]) => job);
			console.log(
				`n8n ${version}, killed with executions waiting for a slot: ${answeredBefore.size} of ${ids.length} answered 200 before the kill; ${all.length} executions; after the restart ${ids.filter((id) => ran.has(id)).length} jobs ran, ${ids.filter((id) => !ran.has(id) && crashed.has(id)).length} held only by a crashed execution; ${twice.length} ran twice`,
			);
			expect(ids.every((id) => ran.has(id) || (crashed.has(id) && answeredBefore.has(id)))).toBe(
				true,
			);
			expect(twice.filter((id) => answeredBefore.has(id))).toEqual([]);
		} finally {
			sb.setWebhook({ attempts: 1 });
		}
	}, 900000);
});
