// The templates of examples/ that e2e.test.ts does not run, run to the end in real n8n (npm run
// test:e2e; the newest version only: test/real/eachVersion.ts) against the sandbox:
// - the S3 template against a local S3-compatible server, run after run: each video ordered once,
//   its SRT, VTT and itself in done/ once its job completes, a cancelled job's video in failed/,
//   the files that are no video never ordered, an order refused (402) ordered by the next run;
// - the Google Drive template, with Google's nodes swapped for the disk (n8n cannot reach Google
//   here) and a webhook that hands it a folder's listing as the Google Drive Trigger would: only the
//   video and audio files are ordered, never the SRT and VTT it writes beside them nor other files.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { tlsPair } from '../helpers/https';
import type { S3Server } from '../helpers/s3Bucket';
import { startS3 } from '../helpers/s3Bucket';
import type { Sandbox } from '../helpers/sandbox';
import { createSandbox } from '../helpers/sandbox';
import { executionsApi } from '../real/executions';
import type { N8n } from '../real/instance';
import { createN8n, installN8n, tempFolder } from '../real/instance';
import type { TemplateNode } from '../real/workflows';
import { localS3Setup, s3TemplateCredentials, template, templateFile } from '../real/workflows';

const VERSIONS = (process.env.N8N_E2E_VERSIONS ?? '2.41.1').split(',').filter(Boolean);
const CREDENTIAL_ID = 'captioningTemplates';
const captioningApi = { id: CREDENTIAL_ID, name: 'Captioning account' };
const S3_WORKFLOW = 'wfTemplateS3Cap1';
const DRIVE_WORKFLOW = 'wfTemplateDrive1';
const DRIVE_HOOK = 'template-drive-listing';

/** n8n polls every 15 s rather than every minute: the same trigger, less waiting. */
const every15s = {
	item: [0, 15, 30, 45].map((s) => ({ mode: 'custom', cronExpression: `${s} * * * * *` })),
};

/** The template's expression without its leading "=". */
const expression = (value: unknown) => String(value).replace(/^=/, '');

/**
 * The Google Drive template with Google's nodes swapped for the disk of `drive` (a folder per Drive
 * folder, the files under files/<id>): the trigger becomes a Webhook whose body's `files` (a listing
 * as the Google Drive Trigger outputs it) a Split Out of the trigger's name hands on; Download reads
 * files/<the template's file id>; each Upload writes the template's file name into the template's
 * folder. Every other node is the template's own.
 */
function driveTemplate(drive: string): string {
	return templateFile(
		template('google-drive-captions', {}, (wf) => {
			const swap = (name: string, node: Partial<TemplateNode>) =>
				Object.assign(
					wf.nodes.find((n) => n.name === name)!,
					{ credentials: undefined, webhookId: undefined },
					node,
				);
			const trigger = wf.nodes.find((n) => n.type === 'n8n-nodes-base.googleDriveTrigger')!;
			const download = wf.nodes.find((n) => n.parameters.operation === 'download')!;
			swap(trigger.name, {
				type: 'n8n-nodes-base.splitOut',
				typeVersion: 1,
				parameters: { fieldToSplitOut: 'body.files', options: {} },
			});
			swap(download.name, {
				type: 'n8n-nodes-base.readWriteFile',
				typeVersion: 1,
				parameters: {
					fileSelector: `=${drive}/files/${expression((download.parameters.fileId as { value: string }).value)}`,
					options: {},
				},
			});
			for (const upload of wf.nodes.filter((n) => n.name.startsWith('Upload ')))
				swap(upload.name, {
					type: 'n8n-nodes-base.readWriteFile',
					typeVersion: 1,
					parameters: {
						operation: 'write',
						fileName: `=${drive}/${expression((upload.parameters.folderId as { value: string }).value)}/${expression(upload.parameters.name)}`,
						dataPropertyName: upload.parameters.inputDataFieldName,
						options: {},
					},
				});
			for (const n of wf.nodes)
				if (n.type.startsWith('n8n-nodes-captioning.')) n.credentials = { captioningApi };
			wf.nodes.push({
				id: 'drive-listing',
				name: 'Drive Listing',
				type: 'n8n-nodes-base.webhook',
				typeVersion: 2,
				position: [-220, 0],
				parameters: {
					httpMethod: 'POST',
					path: DRIVE_HOOK,
					responseMode: 'onReceived',
					options: {},
				},
				webhookId: 'b7d1e0c2-8f3a-4c5d-9e6f-0a1b2c3d4e5f',
			});
			wf.connections['Drive Listing'] = {
				main: [[{ node: trigger.name, type: 'main', index: 0 }]],
			};
		}),
		DRIVE_WORKFLOW,
	);
}

describe.each(VERSIONS)('n8n %s: the templates, run to the end', (version) => {
	let n8n: N8n;
	let sb: Sandbox;
	let s3: S3Server;
	const drive = tempFolder('captioning-drive-');
	const api = executionsApi(() => n8n);
	const { executions, activate, call } = api;
	/** executionsApi's wait, whose failure also names the templates' failed nodes. */
	const waitFor = async <T>(what: string, probe: () => Promise<T | undefined>, ms?: number) =>
		await api.waitFor(what, probe, ms).catch(async (error: Error) => {
			const errors = [
				...(await api.errorsOf(S3_WORKFLOW)),
				...(await api.errorsOf(DRIVE_WORKFLOW)),
			];
			throw new Error(`${error.message}\nfailed nodes:\n${errors.join('\n')}`);
		});

	/** Whether the bucket holds the key: its first byte read (s3rver answers unsigned requests; a HEAD would count as the node's). */
	const stored = async (key: string) => {
		const res = await fetch(`${s3.endpoint}/${s3.bucket}/${key}`, {
			headers: { range: 'bytes=0-0' },
		});
		await res.arrayBuffer();
		return res.ok;
	};
	const keysOf = async (keys: string[]) =>
		(await Promise.all(keys.map(async (k) => ((await stored(k)) ? k : undefined)))).filter(
			(k) => k !== undefined,
		);
	/** The jobs ordered with this metadata key. */
	const jobsWith = (key: string) =>
		sb.ledger.jobs.filter((j) => (j.body.metadata as Record<string, string> | undefined)?.[key]);
	const metadataOf = (job: { body: Record<string, unknown> }) =>
		job.body.metadata as Record<string, string>;

	beforeAll(
		async () => {
			sb = await createSandbox({
				timing: { queuedMs: 300, processingMs: 1500 },
				webhook: { ca: tlsPair().cert },
			});
			s3 = await startS3();
			n8n = await createN8n(await installN8n(version), [drive]);
			n8n.importCredentials([
				{
					id: CREDENTIAL_ID,
					name: 'Captioning account',
					type: 'captioningApi',
					data: { apiKey: sb.keys.full, baseUrl: sb.baseUrl },
				},
				...s3TemplateCredentials(s3),
			]);
			n8n.importWorkflows([
				templateFile(
					template(
						's3-captions',
						{ 'YOUR-BUCKET': s3.bucket },
						localS3Setup(captioningApi, (n) => {
							if (n.type === 'n8n-nodes-captioning.captioningPollingTrigger')
								n.parameters.pollTimes = every15s;
						}),
					),
					S3_WORKFLOW,
				),
				driveTemplate(drive),
			]);
			await n8n.start();
			const since = Date.now();
			await activate([S3_WORKFLOW, DRIVE_WORKFLOW]);
			// The polling trigger counts from its activation: wait for its first reads of the job list.
			await waitFor('the polling trigger to be activated', async () =>
				sb.ledger.requests.some((r) => r.route === 'GET /jobs' && r.at >= since && r.status)
					? true
					: undefined,
			);
		},
		40 * 60 * 1000,
	);

	afterAll(async () => {
		await n8n?.stop();
		await sb?.close();
		await s3?.close();
	});

	test('the S3 template, run after run: each video ordered once, its captions and itself moved to done/ (a cancelled one to failed/), other files never ordered, a refused order ordered by the next run', async () => {
		const video = (name: string) => Buffer.alloc(256 * 1024, name);
		for (const name of ['keynote.mp4', 'panel talk.mov', 'cancel-unusable_media.mp4'])
			await s3.put(`incoming/${name}`, video(name));
		// Not videos: never ordered.
		await s3.put('incoming/notes.txt', 'notes');
		await s3.put('incoming/earlier.srt', '1\n00:00:00,000 --> 00:00:01,000\nHello\n');
		const s3Orders = () => jobsWith('s3_key');

		await n8n.cli(['execute', `--id=${S3_WORKFLOW}`]);
		expect(
			s3Orders()
				.map((j) => metadataOf(j).s3_key)
				.sort(),
		).toEqual([
			'incoming/cancel-unusable_media.mp4',
			'incoming/keynote.mp4',
			'incoming/panel talk.mov',
		]);
		// The polling trigger reports each finished job: its captions and the video go to done/ (a
		// cancelled job's video to failed/), out of incoming/.
		const moved = [
			'done/keynote.srt',
			'done/keynote.vtt',
			'done/keynote.mp4',
			'done/panel talk.srt',
			'done/panel talk.vtt',
			'done/panel talk.mov',
			'failed/cancel-unusable_media.mp4',
		];
		await waitFor(
			'the captions and videos in done/ and failed/',
			async () => ((await keysOf(moved)).length === moved.length ? true : undefined),
			150000,
		);
		const srt = await (await fetch(`${s3.endpoint}/${s3.bucket}/done/keynote.srt`)).text();
		expect(srt).toMatch(/^1\n00:00:00,000 --> /);
		await waitFor('the videos to leave incoming/', async () =>
			(
				await keysOf([
					'incoming/keynote.mp4',
					'incoming/panel talk.mov',
					'incoming/cancel-unusable_media.mp4',
				])
			).length === 0
				? true
				: undefined,
		);
		expect(await keysOf(['incoming/notes.txt', 'incoming/earlier.srt'])).toHaveLength(2);
		expect(await keysOf(['done/cancel-unusable_media.srt'])).toEqual([]);

		// A new video whose order is refused (no funds): the run fails, the video stays, and the next
		// run orders it; the videos moved out are not listed again.
		await s3.put('incoming/funded-later.mp4', video('funded later'));
		sb.injectFault('POST /jobs', { status: 402, code: 'insufficient_funds', message: 'No funds.' });
		const headsBefore = s3.requests.filter((r) => r.method === 'HEAD').length;
		await n8n.cli(['execute', `--id=${S3_WORKFLOW}`]).catch(() => undefined);
		expect(s3Orders()).toHaveLength(3);
		expect(await stored('incoming/funded-later.mp4')).toBe(true);
		sb.clearFaults();
		await n8n.cli(['execute', `--id=${S3_WORKFLOW}`]);
		expect(s3Orders()).toHaveLength(4);
		// Two runs, one video listed: one HEAD each (the S3 Object's check), none for the videos moved out.
		expect(s3.requests.filter((r) => r.method === 'HEAD').length - headsBefore).toBe(2);
		await waitFor(
			'the late video in done/',
			async () =>
				(await keysOf(['done/funded-later.srt', 'done/funded-later.mp4'])).length === 2
					? true
					: undefined,
			150000,
		);
		// Every execution the polling trigger started succeeded (the last may still be deleting the video).
		await api.untilEnded(S3_WORKFLOW);
		const ended = (await executions(S3_WORKFLOW)).filter((e) => e.mode === 'trigger');
		expect(ended.map((e) => e.status)).toEqual(ended.map(() => 'success'));
		expect(sb.ledger.charges.filter((c) => s3Orders().some((j) => j.id === c.jobId))).toHaveLength(
			4,
		);
		console.log(
			`n8n ${version}, S3 template: ${s3Orders().length} orders for 4 videos, ${ended.length} executions; done/ and failed/ hold ${moved.length + 2} files`,
		);
	}, 360000);

	test("the Google Drive template, handed a folder's listing: only video and audio are ordered, their SRT and VTT go next to them, and a listing of those (and the video again) orders nothing", async () => {
		const folder = 'folder-videos';
		const listing = [
			{ id: 'file-talk', name: 'talk.mp4', mimeType: 'video/mp4' },
			{ id: 'file-podcast', name: 'podcast.mp3', mimeType: 'audio/mpeg' },
			{ id: 'file-old-srt', name: 'intro.srt', mimeType: 'application/x-subrip' },
			{ id: 'file-old-vtt', name: 'intro.vtt', mimeType: 'text/vtt' },
			{ id: 'file-notes', name: 'notes.pdf', mimeType: 'application/pdf' },
			{ id: 'file-script', name: 'Script', mimeType: 'application/vnd.google-apps.document' },
		].map((f) => ({ ...f, parents: [folder] }));
		// The Drive folder holds the files (under files/<id>, as Download reads them) and gets the captions.
		for (const dir of ['files', folder]) mkdirSync(path.join(drive, dir), { recursive: true });
		for (const f of listing)
			writeFileSync(path.join(drive, 'files', f.id), Buffer.alloc(128 * 1024, f.name));
		const driveOrders = () => jobsWith('drive_file_id');
		const ended = async (count: number) =>
			await waitFor(`${count} executions of the Drive template to end`, async () => {
				const list = await executions(DRIVE_WORKFLOW);
				return list.length >= count &&
					list.every((e) => !['new', 'running', 'waiting'].includes(e.status))
					? list
					: undefined;
			});

		expect(await call(DRIVE_HOOK, { files: listing })).toBe(200);
		const first = await ended(1);
		expect({
			statuses: first.map((e) => e.status),
			errors: await api.errorsOf(DRIVE_WORKFLOW),
		}).toEqual({
			statuses: ['success'],
			errors: [],
		});
		expect(
			driveOrders()
				.map((j) => [metadataOf(j).drive_file_id, j.body.title])
				.sort(),
		).toEqual([
			['file-podcast', 'podcast'],
			['file-talk', 'talk'],
		]);
		expect(readdirSync(path.join(drive, folder)).sort()).toEqual([
			'podcast.srt',
			'podcast.vtt',
			'talk.srt',
			'talk.vtt',
		]);
		expect(readFileSync(path.join(drive, folder, 'talk.srt'), 'utf8')).toMatch(
			/^1\n00:00:00,000 --> /,
		);

		// The next poll lists what the workflow uploaded (Drive gives SRT and VTT these types), and
		// the same video again (a re-run): nothing is ordered, nothing charged.
		const chargesBefore = sb.ledger.charges.length;
		const second = [
			{ id: 'file-talk-srt', name: 'talk.srt', mimeType: 'application/x-subrip' },
			{ id: 'file-talk-vtt', name: 'talk.vtt', mimeType: 'text/vtt' },
			{ id: 'file-podcast-srt', name: 'podcast.srt', mimeType: 'application/x-subrip' },
			{ id: 'file-podcast-vtt', name: 'podcast.vtt', mimeType: 'text/vtt' },
			{ id: 'file-talk', name: 'talk.mp4', mimeType: 'video/mp4' },
		].map((f) => ({ ...f, parents: [folder] }));
		expect(await call(DRIVE_HOOK, { files: second })).toBe(200);
		const both = await ended(2);
		expect(both.map((e) => e.status)).toEqual(['success', 'success']);
		expect(driveOrders()).toHaveLength(2);
		expect(sb.ledger.charges.length).toBe(chargesBefore);
		console.log(
			`n8n ${version}, Drive template: ${listing.length} files listed, ${driveOrders().length} ordered; then ${second.length} listed (4 of them its own captions), none ordered`,
		);
	}, 240000);
});
