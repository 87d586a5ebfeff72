// Paying once for any lifetime, in real n8n (npm run test:e2e): a repeat of an order after the
// service has forgotten its Idempotency-Key gets the first job back and sends no second POST
// (Media URL, Upload ID, Binary File; S3 Object in s3Objects.test.ts), also behind 1,200 newer
// jobs; and a captions link that redirects to another origin is downloaded without the key. Each case runs Manual Trigger → Captioning through n8n's CLI.
// Versions: N8N_E2E_VERSIONS (default 2.41.1 and 1.122.5).
import { writeFileSync } from 'node:fs';
import path from 'node:path';

import { httpReceiver } from '../helpers/https';
import type { HttpsReceiver } from '../helpers/https';
import type { Sandbox } from '../helpers/sandbox';
import { createSandbox } from '../helpers/sandbox';
import type { N8n } from '../real/instance';
import { createN8n, installN8n, tempFolder } from '../real/instance';
import { manualWorkflow, node } from '../real/workflows';

const VERSIONS = (process.env.N8N_E2E_VERSIONS ?? '2.41.1,1.122.5').split(',').filter(Boolean);
const CREDENTIAL = 'captioningRepeats';
const MEDIA = 'https://media.example.com/repeats';

type Item = { json: Record<string, unknown> };

/** Manual Trigger → (Read a file →) Captioning with these parameters. */
function workflow(id: string, parameters: object, readFile?: string): string {
	const captioning = node(id, 'Captioning', 'n8n-nodes-captioning.captioning', 1, parameters, 440, {
		credentials: { captioningApi: { id: CREDENTIAL, name: CREDENTIAL } },
	});
	const read = node(
		id,
		'Read',
		'n8n-nodes-base.readWriteFile',
		1,
		{ fileSelector: readFile, options: {} },
		220,
	);
	return manualWorkflow(id, `Repeats: ${id}`, readFile ? [read, captioning] : [captioning]);
}

describe.each(VERSIONS)('n8n %s: repeats and redirects', (version) => {
	let n8n: N8n;
	let sb: Sandbox;
	let elsewhere: HttpsReceiver;
	const files = tempFolder('captioning-repeats-');
	const video = path.join(files, 'lecture.mp4');
	let uploadId = '';
	const posts = () => sb.ledger.requests.filter((r) => r.route === 'POST /jobs');
	/** The Captioning node's first item, as `n8n execute --rawOutput` prints it (2.x prints log lines first). */
	const run = async (id: string): Promise<Item> => {
		const { stdout } = await n8n.cli(['execute', `--id=${id}`, '--rawOutput']);
		const start = stdout.indexOf('\n{') + 1;
		const data = JSON.parse(stdout.slice(start, stdout.indexOf('\n}', start) + 2)) as {
			data: { resultData: { runData: Record<string, Array<{ data: { main: Item[][] } }>> } };
		};
		return data.data.resultData.runData.Captioning[0].data.main[0][0];
	};
	const order = (params: object = {}) => ({
		resource: 'job',
		operation: 'create',
		...params,
	});

	beforeAll(
		async () => {
			sb = await createSandbox({ timing: null });
			elsewhere = await httpReceiver((_req, res) => {
				res.setHeader('content-type', 'application/x-subrip');
				res.end('1\n00:00:00,000 --> 00:00:01,000\nFrom the storage host\n');
			});
			writeFileSync(video, Buffer.alloc(256 * 1024, 'lecture'));
			// An upload made beforehand (Upload → Create's output), for the Upload ID source.
			const created = (await (
				await fetch(`${sb.baseUrl}/uploads`, {
					method: 'POST',
					headers: { authorization: `Bearer ${sb.keys.full}`, 'content-type': 'application/json' },
					body: JSON.stringify({ filename: 'prepared.mp4', size_bytes: 4 }),
				})
			).json()) as { id: string; upload_url: string };
			await fetch(created.upload_url, {
				method: 'PUT',
				body: Buffer.from('demo'),
				headers: { 'content-length': '4' },
			});
			uploadId = created.id;
			n8n = await createN8n(await installN8n(version), [files]);
			n8n.importCredentials([
				{
					id: CREDENTIAL,
					name: CREDENTIAL,
					type: 'captioningApi',
					data: { apiKey: sb.keys.full, baseUrl: sb.baseUrl },
				},
			]);
			const workflows: Array<[string, object, string?]> = [
				['wfRepeatUrl0001', order({ source: 'url', mediaUrl: `${MEDIA}/url.mp4` })],
				['wfRepeatUpload1', order({ source: 'upload', uploadId })],
				['wfRepeatBinary1', order({ source: 'binary', binaryPropertyName: 'data' }), video],
				['wfRepeatOld0001', order({ source: 'url', mediaUrl: `${MEDIA}/old.mp4` })],
			];
			n8n.importWorkflows(
				workflows.map(([id, parameters, file]) => workflow(id, parameters, file)),
			);
		},
		40 * 60 * 1000,
	);

	afterAll(async () => {
		await sb?.close();
		await elsewhere?.close();
	});

	test.each([
		['Media URL', 'wfRepeatUrl0001'],
		['Upload ID', 'wfRepeatUpload1'],
		['Binary File', 'wfRepeatBinary1'],
	])(
		'%s: repeated after the service forgot the key, the first job comes back (1 job, 1 charge, no second POST)',
		async (_source, id) => {
			sb.resetLedger();
			const first = await run(id);
			expect(first.json).toMatchObject({ object: 'job', idempotent_replayed: false });
			sb.forgetIdempotencyKeys();
			const again = await run(id);
			expect(again.json).toMatchObject({ id: first.json.id, idempotent_replayed: true });
			expect(posts()).toHaveLength(1);
			expect({ jobs: sb.ledger.jobs.length, charges: sb.ledger.charges.length }).toEqual({
				jobs: 1,
				charges: 1,
			});
		},
		180000,
	);

	test('an earlier order behind 1,200 newer jobs, the key forgotten: the repeat reads its job by the id n8n kept (one read, no POST) and succeeds', async () => {
		sb.resetLedger();
		const first = await run('wfRepeatOld0001');
		sb.seedHistory(1200);
		sb.forgetIdempotencyKeys();
		sb.resetLedger();
		const again = await run('wfRepeatOld0001');
		expect(again.json).toMatchObject({ id: first.json.id, idempotent_replayed: true });
		expect(sb.ledger.requests.map((r) => r.route)).toEqual(['GET /jobs/{id}']);
	}, 180000);

	test('a captions link that redirects to another origin is downloaded there, and that origin never sees the key', async () => {
		const job = (await (
			await fetch(`${sb.baseUrl}/jobs`, {
				method: 'POST',
				headers: { authorization: `Bearer ${sb.keys.full}`, 'content-type': 'application/json' },
				body: JSON.stringify({ media_url: `${MEDIA}/redirected.mp4` }),
			})
		).json()) as { id: string };
		sb.completeJob(job.id);
		await n8n.cli([
			'import:workflow',
			`--input=${workflow('wfRepeatCaption', { resource: 'job', operation: 'getCaptions', jobId: { __rl: true, mode: 'id', value: job.id }, formats: ['srt'], binaryPropertyName: 'data' })}`,
		]);
		sb.injectFault('GET /jobs/{id}/captions', {
			kind: 'redirect',
			status: 302,
			location: `${elsewhere.url}/storage/captions.srt`,
		});
		const item = await run('wfRepeatCaption');
		expect(item.json.error).toBeUndefined();
		expect(elsewhere.received).toHaveLength(1);
		expect(elsewhere.received[0].headers.authorization).toBeUndefined();
		expect(elsewhere.received[0].url).toBe('/storage/captions.srt');
	}, 180000);
});
