// Job → Create with Source S3 Object in real n8n (npm run test:e2e), against the sandbox and a real
// signature-checking S3 server (@20minutes/s3rver): the Captioning S3 Media credential's Test
// button (n8n's own /credentials/test), and S3 Object → Job → Create (Poll) → Get Captions → Write
// File run twice: one order, one charge, the SRT written both times, and not one media byte read
// by n8n (the sandbox fetched the media from S3 itself). Versions: N8N_E2E_VERSIONS.
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

import type { S3Server } from '../helpers/s3Bucket';
import { startS3 } from '../helpers/s3Bucket';
import type { Sandbox } from '../helpers/sandbox';
import { createSandbox } from '../helpers/sandbox';
import type { N8n } from '../real/instance';
import { createN8n, installN8n, tempFolder, tempJson } from '../real/instance';

const VERSIONS = (process.env.N8N_E2E_VERSIONS ?? '2.41.1,1.122.5').split(',').filter(Boolean);
const API_CREDENTIAL = 'captioningS3E2eApi';
const S3_CREDENTIAL = 'captioningS3E2eS3';

const node = (
	name: string,
	type: string,
	typeVersion: number,
	parameters: object,
	x: number,
	extra: object = {},
) => ({ id: `s3e2e-${name}`, name, type, typeVersion, parameters, position: [x, 0], ...extra });
const credentials = {
	captioningApi: { id: API_CREDENTIAL, name: 'Captioning account' },
	captioningS3Api: { id: S3_CREDENTIAL, name: 'Local S3 media' },
};

/** Manual Trigger → the object → Job → Create (S3 Object, Poll) → Get Captions → Write File. */
function s3Workflow(id: string, bucket: string, key: string, folder: string): string {
	const names = ['Start', 'Object', 'Order', 'Captions', 'Write SRT'];
	return tempJson(`${id}.json`, {
		id,
		name: `S3 Object: ${id}`,
		versionId: `${id}-v1`,
		active: false,
		settings: { executionOrder: 'v1' },
		nodes: [
			node('Start', 'n8n-nodes-base.manualTrigger', 1, {}, 0),
			node(
				'Object',
				'n8n-nodes-base.set',
				3.4,
				{ mode: 'raw', jsonOutput: JSON.stringify({ bucket, key }) },
				200,
			),
			node(
				'Order',
				'n8n-nodes-captioning.captioning',
				1,
				{
					resource: 'job',
					operation: 'create',
					source: 's3',
					s3Bucket: '={{ $json.bucket }}',
					s3Key: '={{ $json.key }}',
					waitForCompletion: 'poll',
					pollInterval: 1,
					timeout: 5,
				},
				400,
				{ credentials },
			),
			node(
				'Captions',
				'n8n-nodes-captioning.captioning',
				1,
				{
					resource: 'job',
					operation: 'getCaptions',
					jobId: '={{ $json.id }}',
					formats: ['srt'],
					binaryPropertyName: 'data',
				},
				600,
				{ credentials: { captioningApi: credentials.captioningApi } },
			),
			node(
				'Write SRT',
				'n8n-nodes-base.readWriteFile',
				1,
				{
					operation: 'write',
					fileName: `=${folder}/{{ $execution.id }}.srt`,
					dataPropertyName: 'data',
					options: {},
				},
				800,
			),
		],
		connections: Object.fromEntries(
			names
				.slice(0, -1)
				.map((name, n) => [name, { main: [[{ node: names[n + 1], type: 'main', index: 0 }]] }]),
		),
	});
}

describe.each(VERSIONS)('n8n %s: S3 Object source', (version) => {
	let n8n: N8n;
	let sb: Sandbox;
	let s3: S3Server;
	const work = tempFolder('captioning-s3-source-');
	const out = path.join(work, 'captions');
	const s3Data = () => ({
		accessKeyId: s3.accessKeyId,
		secretAccessKey: s3.secretAccessKey,
		region: 'us-east-1',
		endpoint: s3.endpoint,
		forcePathStyle: true,
	});

	beforeAll(
		async () => {
			sb = await createSandbox({ timing: { queuedMs: 200, processingMs: 800 } });
			s3 = await startS3();
			mkdirSync(out, { recursive: true });
			n8n = await createN8n(await installN8n(version), [work]);
			await n8n.cli([
				'import:credentials',
				`--input=${tempJson('credentials.json', [
					{
						id: API_CREDENTIAL,
						name: 'Captioning account',
						type: 'captioningApi',
						data: { apiKey: sb.keys.full, baseUrl: sb.baseUrl },
					},
					{ id: S3_CREDENTIAL, name: 'Local S3 media', type: 'captioningS3Api', data: s3Data() },
				])}`,
			]);
			await s3.put('lectures/week 1/intro.mp4', Buffer.alloc(256 * 1024, 'intro'));
			await n8n.cli([
				'import:workflow',
				`--input=${s3Workflow('wfS3Object0001', s3.bucket, 'lectures/week 1/intro.mp4', out)}`,
			]);
			await n8n.start();
		},
		10 * 60 * 1000,
	);

	afterAll(async () => {
		await n8n?.stop();
		await s3?.close();
		await sb?.close();
	});

	test("the credential's Test button, sent by n8n's own helpers: right keys pass, a wrong secret, an unknown bucket and a bad region are named", async () => {
		const press = async (data: object) =>
			(
				await n8n.rest<{ status: string; message: string }>('POST', '/credentials/test', {
					credentials: {
						id: S3_CREDENTIAL,
						name: 'Local S3 media',
						type: 'captioningS3Api',
						data: { ...s3Data(), ...data },
					},
				})
			).body;
		expect(await press({})).toMatchObject({ status: 'OK' });
		expect(await press({ testBucket: s3.bucket })).toMatchObject({ status: 'OK' });
		// n8n 1.x never applies a test's responseCode rules (CONTRIBUTING, "n8n's faults"): it shows
		// its own words for the status.
		const rulesApply = !version.startsWith('1.');
		expect(await press({ secretAccessKey: 'wrong' })).toEqual({
			status: 'Error',
			message: expect.stringMatching(
				rulesApply ? /^S3 refused the key \(403\): copy Access Key ID and Secret/ : /^Forbidden/,
			),
		});
		expect((await press({ testBucket: 'no-such-bucket' })).message).toMatch(
			rulesApply ? /^No such bucket \(404\): check Bucket to Test/ : /could not be found/,
		);
		expect((await press({ region: 'Frankfurt' })).message).toMatch(
			/Region "Frankfurt" is not a region name/,
		);
	}, 60000);

	test(
		'S3 Object → Create (Poll) → Get Captions run twice, the service forgetting the key between: one order, the SRT both times, no media byte through n8n',
		async () => {
			const before = s3.requests.length;
			const fromN8n = () =>
				s3.requests.slice(before).filter((r) => !r.url.includes('X-Amz-Signature'));
			for (let run = 1; run <= 2; run++) {
				// The service forgets the Idempotency-Key between the runs: the repeat must not need it.
				if (run === 2) sb.forgetIdempotencyKeys();
				const { stdout } = await n8n.cli(['execute', '--id=wfS3Object0001', '--rawOutput']);
				// The execution's data (items, node context) holds no signed link: jobs show media.url
				// without its query, and the node context when the link was signed, not the link.
				expect(stdout).toContain('"media"');
				expect(stdout).not.toMatch(/X-Amz-Signature|X-Amz-Credential/);
			}
			const jobs = sb.ledger.jobs.filter((j) =>
				String(j.body.media_url).includes('/lectures/week%201/intro.mp4?'),
			);
			expect({
				jobs: jobs.length,
				charges: sb.ledger.charges.filter((c) => c.jobId === jobs[0]?.id).length,
			}).toEqual({ jobs: 1, charges: 1 });
			// n8n's only requests to the store: one HEAD per run. The media went from the store to the service.
			expect(fromN8n().map((r) => r.method)).toEqual(['HEAD', 'HEAD']);
			expect(sb.ledger.mediaFetches).toEqual([
				expect.objectContaining({
					url: `${s3.endpoint}/${s3.bucket}/lectures/week%201/intro.mp4`,
					status: 206,
					size: 256 * 1024,
				}),
			]);
			const posts = sb.ledger.requests.filter((r) => r.route === 'POST /jobs').map((r) => r.status);
			// The second run finds the first run's order by its tag: no second POST (each run signs
			// its own link, which the key alone would have refused with a 409).
			expect(posts).toEqual([201]);
			const srts = sb.ledger.captionDownloads.filter(
				(d) => d.jobId === jobs[0].id && d.format === 'srt',
			);
			expect(srts).toHaveLength(2);
			const written = readdirSync(out);
			expect(written).toHaveLength(2);
			for (const file of written)
				expect(readFileSync(path.join(out, file), 'utf8')).toMatch(/^1\n00:00:00,000 --> /);
			console.log(
				`n8n ${version}, S3 Object → Create (Poll) → Get Captions run twice: ${jobs.length} job, POST /jobs ${posts.join(',')}, n8n → S3: ${fromN8n()
					.map((r) => r.method)
					.join(',')}, the service's fetches: ${sb.ledger.mediaFetches.length}`,
			);
		},
		5 * 60 * 1000,
	);
});
