// Job → Create with Source S3 Object, in n8n's engine against the sandbox and a real
// signature-checking S3 server (@20minutes/s3rver, test/helpers/s3Bucket.ts): one HEAD per object from
// n8n, the signed link fetched by the sandbox as the service would, no media byte through n8n, the
// checks before any order, paying once across executions, and the link kept out of outputs and errors.
import type { IDataObject, INodeExecutionData } from 'n8n-workflow';

import { clearProcessedData } from '../engine/processed';
import { runCaptioning } from '../helpers/captioning';
import type { S3Server } from '../helpers/s3Bucket';
import { startS3 } from '../helpers/s3Bucket';
import type { Sandbox } from '../helpers/sandbox';
import { useSandbox } from '../helpers/sandbox';

let sb: Sandbox;
useSandbox((s) => (sb = s));
let s3: S3Server;
beforeAll(async () => {
	s3 = await startS3();
	for (const name of ['talk.mp4', 'a.mp4', 'b.mp4', 'c.mp4', 'd.mp4', 'e.mp4'])
		await s3.put(`videos/${name}`, Buffer.alloc(4096, name.charCodeAt(0)));
	await s3.put('videos/Vidéo à l’école 日本.mp4', Buffer.alloc(2048, 7));
});
afterAll(async () => await s3.close());
beforeEach(() => {
	s3.requests.length = 0;
});

const credential = (overrides: IDataObject = {}): IDataObject => ({
	accessKeyId: s3.accessKeyId,
	secretAccessKey: s3.secretAccessKey,
	region: 'us-east-1',
	endpoint: s3.endpoint,
	forcePathStyle: true,
	...overrides,
});
const create = (params: IDataObject = {}) => ({
	resource: 'job',
	operation: 'create',
	source: 's3',
	s3Bucket: '={{ $json.bucket }}',
	s3Key: '={{ $json.key }}',
	...params,
});
const objects = (keys: string[]): INodeExecutionData[] =>
	keys.map((key) => ({ json: { bucket: s3.bucket, key } }));
const posts = () => sb.ledger.requests.filter((r) => r.route === 'POST /jobs');
const fromN8n = () => s3.requests.filter((r) => !r.url.includes('X-Amz-Signature'));
let workflow = 0;
const newWorkflow = () => `s3-source-${++workflow}`;

/** Until the sandbox has fetched the media of every job (it does so as it takes the job). */
async function fetched(count: number): Promise<void> {
	await sb.settleDeliveries();
	for (
		let n = 0;
		n < 100 && sb.ledger.mediaFetches.filter((f) => f.status !== null || f.error).length < count;
		n++
	)
		await new Promise((r) => setTimeout(r, 20));
}

test('an S3 object is ordered by a signed link: one HEAD from n8n, the service fetches the media itself, the output shows no signature', async () => {
	const run = await runCaptioning(sb, create(), {
		input: objects(['videos/talk.mp4']),
		s3: credential(),
	});
	expect(run.failure).toBeUndefined();
	const [item] = run.items;
	expect(item.json).toMatchObject({
		status: 'queued',
		title: 'talk.mp4',
		idempotent_replayed: false,
	});
	// The job shows the object, not the link.
	expect((item.json.media as IDataObject).url).toBe(`${s3.endpoint}/${s3.bucket}/videos/talk.mp4`);
	expect(JSON.stringify(item.json)).not.toMatch(/X-Amz-|Signature/);

	// What n8n sent the store: one signed HEAD, no GET. The media went from the store to the service.
	expect(fromN8n().map((r) => [r.method, r.status, r.bytes])).toEqual([['HEAD', 200, 0]]);
	await fetched(1);
	expect(sb.ledger.mediaFetches).toEqual([
		expect.objectContaining({
			url: `${s3.endpoint}/${s3.bucket}/videos/talk.mp4`,
			status: 206,
			size: 4096,
			bytes: 1024,
		}),
	]);

	// The order: a presigned GET for 24 h by default (signed now, an hour longer), to the object as checked.
	const [job] = sb.ledger.jobs;
	const link = new URL(job.body.media_url as string);
	expect(link.searchParams.get('X-Amz-Expires')).toBe('90000');
	expect(link.searchParams.get('X-Amz-Date')).toMatch(/^\d{8}T\d{6}Z$/);
	expect(link.searchParams.get('X-Amz-Credential')).toMatch(
		/^S3RVER\/\d{8}\/us-east-1\/s3\/aws4_request$/,
	);
	expect(job.body).toMatchObject({ title: 'talk.mp4' });
	expect(sb.job(job.id)).toMatchObject({ status: 'queued' });
	expect(sb.completeJob(job.id)).toMatchObject({ status: 'completed' });
});

test('Object Key may be a whole s3://bucket/key, with spaces and non-ASCII; Link Valid For sets the expiry', async () => {
	const run = await runCaptioning(
		sb,
		create({ s3Bucket: '', s3Key: '={{ $json.uri }}', s3LinkHours: 2 }),
		{
			input: [{ json: { uri: `s3://${s3.bucket}/videos/Vidéo à l’école 日本.mp4` } }],
			s3: credential(),
		},
	);
	expect(run.failure).toBeUndefined();
	expect(run.items[0].json.title).toBe('Vidéo à l’école 日本.mp4');
	await fetched(1);
	expect(sb.ledger.mediaFetches[0]).toMatchObject({ status: 206, size: 2048 });
	expect(
		new URL(sb.ledger.jobs[0].body.media_url as string).searchParams.get('X-Amz-Expires'),
	).toBe('10800');
});

test('a batch: every object checked before the first order, ordered concurrently, outputs paired with inputs', async () => {
	const keys = ['a', 'b', 'c', 'd', 'e'].map((n) => `videos/${n}.mp4`);
	const run = await runCaptioning(sb, create({ concurrency: 3 }), {
		input: objects(keys),
		s3: credential(),
	});
	expect(run.failure).toBeUndefined();
	expect(run.items.map((i) => [i.json.title, i.pairedItem])).toEqual(
		keys.map((k, n) => [k.slice(7), { item: n }]),
	);
	expect(fromN8n().map((r) => r.method)).toEqual(['HEAD', 'HEAD', 'HEAD', 'HEAD', 'HEAD']);
	// Every HEAD came before the first POST /jobs.
	expect(Math.max(...fromN8n().map((r) => r.at))).toBeLessThanOrEqual(
		Math.min(...posts().map((r) => r.at)),
	);
	expect(sb.ledger.jobs).toHaveLength(5);
	await fetched(5);
	expect(sb.ledger.mediaFetches.map((f) => f.status)).toEqual([206, 206, 206, 206, 206]);
});

describe('checked before any order: each problem names bucket and key and orders nothing', () => {
	test('a missing object in a batch: the batch orders nothing', async () => {
		const run = await runCaptioning(sb, create(), {
			input: objects(['videos/a.mp4', 'videos/missing.mp4', 'videos/b.mp4']),
			s3: credential(),
		});
		expect(run.failure?.message).toBe(
			`S3 object s3://${s3.bucket}/videos/missing.mp4 cannot be read (404 NoSuchKey)`,
		);
		expect(run.failure?.description).toMatch(
			/does not exist: check Object Key.*Nothing was ordered\.$/,
		);
		expect(posts()).toHaveLength(0);
	});

	test('with Continue On Fail the missing object is an error item in its place, the others are ordered', async () => {
		const run = await runCaptioning(sb, create(), {
			input: objects(['videos/a.mp4', 'videos/missing.mp4']),
			s3: credential(),
			settings: { onError: 'continueRegularOutput' },
		});
		expect(run.items.map((i) => i.json.error ?? i.json.status)).toEqual([
			'queued',
			`S3 object s3://${s3.bucket}/videos/missing.mp4 cannot be read (404 NoSuchKey)`,
		]);
		expect(posts()).toHaveLength(1);
	});

	test('a wrong secret: refused by the store (403), nothing ordered, the secret nowhere in the error', async () => {
		const run = await runCaptioning(sb, create(), {
			input: objects(['videos/a.mp4']),
			s3: credential({ secretAccessKey: 'not-the-secret' }),
		});
		expect(run.failure?.message).toBe(
			`S3 object s3://${s3.bucket}/videos/a.mp4 cannot be read (403)`,
		);
		expect(run.failure?.description).toMatch(
			/wrong Secret Access Key, or no s3:GetObject permission/,
		);
		expect(JSON.stringify(run.failure)).not.toContain('not-the-secret');
		expect(posts()).toHaveLength(0);
	});

	test('an unreachable store, an empty Bucket Name, a malformed s3:// and a bad Link Valid For are named', async () => {
		const unreachable = await runCaptioning(sb, create(), {
			input: objects(['videos/a.mp4']),
			s3: credential({ endpoint: 'http://127.0.0.1:9' }),
		});
		expect(unreachable.failure?.message).toBe(
			'Could not reach the S3 store at http://127.0.0.1:9 (ECONNREFUSED)',
		);
		expect(unreachable.failure?.description).toMatch(
			/Check Region and Custom Endpoint in the Captioning S3 Media credential \(nothing was ordered\)/,
		);
		const noBucket = await runCaptioning(sb, create({ s3Bucket: '' }), {
			input: objects(['videos/a.mp4']),
			s3: credential(),
		});
		expect(noBucket.failure?.message).toBe('Bucket Name is empty');
		const badUri = await runCaptioning(sb, create({ s3Key: 's3://' }), {
			input: objects(['x']),
			s3: credential(),
		});
		expect(badUri.failure?.message).toBe('"s3://" is not an S3 object');
		const hours = await runCaptioning(sb, create({ s3LinkHours: 168 }), {
			input: objects(['videos/a.mp4']),
			s3: credential(),
		});
		expect(hours.failure?.message).toBe('Link Valid For is 168 hours');
		expect(posts()).toHaveLength(0);
	});

	test('a HEAD without Content-Length (the size unknown) is ordered, not refused as empty', async () => {
		await s3.put('videos/unsized.mp4', Buffer.alloc(4096, 9));
		const run = await runCaptioning(sb, create(), {
			input: objects(['videos/unsized.mp4']),
			s3: credential(),
		});
		expect(run.failure).toBeUndefined();
		expect(run.items[0].json).toMatchObject({ status: 'queued', title: 'unsized.mp4' });
		expect(posts()).toHaveLength(1);
	});

	test("an object over the service's 5242880000 bytes is refused after its HEAD", async () => {
		await s3.putLarge('videos/huge.mp4', 5242880001);
		const run = await runCaptioning(sb, create(), {
			input: objects(['videos/huge.mp4']),
			s3: credential(),
		});
		expect(run.failure?.message).toBe(
			`S3 object s3://${s3.bucket}/videos/huge.mp4 is 5242880001 bytes, over the service's limit of 5242880000 bytes (5.24 GB)`,
		);
		expect(posts()).toHaveLength(0);
	});
});

describe('paying once: the same object with the same options replays, whatever signed the link', () => {
	afterEach(() => clearProcessedData());

	test('a second run of the workflow (a new link) replays the first job: one job, one charge', async () => {
		const workflowId = newWorkflow();
		const first = await runCaptioning(sb, create(), {
			input: objects(['videos/a.mp4', 'videos/b.mp4']),
			s3: credential(),
			workflowId,
		});
		const second = await runCaptioning(sb, create(), {
			input: objects(['videos/b.mp4', 'videos/a.mp4']),
			s3: credential(),
			workflowId,
		});
		expect(second.failure).toBeUndefined();
		expect(sb.ledger.jobs).toHaveLength(2);
		expect(sb.ledger.charges).toHaveLength(2);
		expect(second.items.map((i) => [i.json.id, i.json.idempotent_replayed])).toEqual([
			[first.items[1].json.id, true],
			[first.items[0].json.id, true],
		]);
		// Each run signs its own link: the service refuses the key's new body (409; the same link, signed
		// within the same second, is replayed by the service), and the node answers with the earlier job
		// of the key (found by its tag), the same object and options.
		expect(
			posts()
				.slice(2)
				.every((r) => r.status === 409 || r.status === 200),
		).toBe(true);
		expect(JSON.stringify(second.items)).not.toMatch(/X-Amz-/);

		// Another Link Valid For is the same order: the same job.
		const third = await runCaptioning(sb, create({ s3LinkHours: 48 }), {
			input: objects(['videos/a.mp4']),
			s3: credential(),
			workflowId,
		});
		expect(third.items[0].json).toMatchObject({
			id: first.items[0].json.id,
			idempotent_replayed: true,
		});
		expect(sb.ledger.charges).toHaveLength(2);
	});

	/** An order of the object that fails as `fault` says, then n8n's Retry of that execution (the node context copied). */
	async function failThenRetry(key: string, fault: object) {
		const workflowId = newWorkflow();
		await s3.put(key, Buffer.alloc(4096, 3));
		sb.injectFault('POST /jobs', fault);
		const run = async (mode: 'trigger' | 'retry', contextData?: object) =>
			await runCaptioning(sb, create(), {
				input: objects([key]),
				s3: credential(),
				workflowId,
				mode,
				contextData: contextData as never,
			});
		const failed = await run('trigger');
		// What n8n's Retry copies: the node context, where nothing of the link is kept.
		expect(JSON.stringify(failed.contextData())).not.toMatch(/X-Amz-Signature|X-Amz-Credential/);
		const postsBefore = posts().length;
		return { failed, postsBefore, retried: await run('retry', failed.contextData()) };
	}

	test('a refused order (402: no funds): the Retry after topping up orders it, with a link signed anew', async () => {
		const { failed, retried } = await failThenRetry('videos/f.mp4', {
			status: 402,
			code: 'insufficient_funds',
			message: 'Injected: no funds',
		});
		expect(failed.failure?.message).toMatch(/^Injected: no funds/);
		expect(retried.failure).toBeUndefined();
		expect(sb.ledger.charges).toHaveLength(1);
	});

	test("an order whose POSTs got no answer (the connection reset each time): the execution's Retry moments later sends it again with its key, and it is ordered once", async () => {
		const { failed, postsBefore, retried } = await failThenRetry('videos/c.mp4', {
			kind: 'reset',
			times: 6,
		});
		expect(failed.failure?.description).toMatch(/a job may exist and be charged/);
		expect(retried.failure).toBeUndefined();
		expect(retried.items[0].json).toMatchObject({ object: 'job', idempotent_replayed: false });
		expect(posts()).toHaveLength(postsBefore + 1);
		expect(sb.ledger.charges).toHaveLength(1);
	});

	test("the execution's Retry finds what the first try ordered by its tag: no second POST, nothing refused", async () => {
		const workflowId = newWorkflow();
		sb.injectFault('POST /jobs', {
			status: 400,
			code: 'invalid_request',
			message: 'Injected refusal',
			after: 1,
		});
		const input = objects(['videos/c.mp4', 'videos/d.mp4']);
		const params = create({ concurrency: 1 });
		const failed = await runCaptioning(sb, params, {
			input,
			s3: credential(),
			workflowId,
			mode: 'trigger',
		});
		expect(failed.failure?.message).toMatch(/^Injected refusal/);
		const retried = await runCaptioning(sb, params, {
			input,
			s3: credential(),
			workflowId,
			mode: 'retry',
			contextData: failed.contextData(),
		});
		expect(retried.failure).toBeUndefined();
		expect(retried.items.map((i) => i.json.idempotent_replayed)).toEqual([true, false]);
		expect(sb.ledger.charges).toHaveLength(2);
		expect(posts().map((r) => r.status)).toEqual([201, 400, 201]);
	});

	test('a new upload to the same key (another ETag) is another order; other options are another order', async () => {
		const workflowId = newWorkflow();
		await s3.put('videos/e2.mp4', Buffer.alloc(4096, 1));
		await runCaptioning(sb, create(), {
			input: objects(['videos/e2.mp4']),
			s3: credential(),
			workflowId,
		});
		await s3.put('videos/e2.mp4', Buffer.alloc(4096, 2));
		const replaced = await runCaptioning(sb, create(), {
			input: objects(['videos/e2.mp4']),
			s3: credential(),
			workflowId,
		});
		expect(replaced.items[0].json.idempotent_replayed).toBe(false);
		const verbatim = await runCaptioning(sb, create({ options: { style: 'verbatim' } }), {
			input: objects(['videos/e2.mp4']),
			s3: credential(),
			workflowId,
		});
		expect(verbatim.items[0].json.idempotent_replayed).toBe(false);
		expect(sb.ledger.charges).toHaveLength(3);
	});

	test('a Custom Key replays the same object across runs; reused for another object it is refused, naming the object', async () => {
		const params = create({
			idempotency: 'custom',
			idempotencyKey: '={{ "lecture-" + $json.key.split("/")[1] }}',
		});
		const first = await runCaptioning(sb, params, {
			input: objects(['videos/a.mp4']),
			s3: credential(),
		});
		const again = await runCaptioning(sb, params, {
			input: objects(['videos/a.mp4']),
			s3: credential(),
		});
		expect(again.items[0].json).toMatchObject({
			id: first.items[0].json.id,
			idempotent_replayed: true,
		});
		const other = await runCaptioning(
			sb,
			create({ idempotency: 'custom', idempotencyKey: 'lecture-a.mp4' }),
			{ input: objects(['videos/b.mp4']), s3: credential() },
		);
		expect(other.failure?.description).toMatch(
			/^The Idempotency Key "lecture-a.mp4" was used before for a different order than s3:\/\/captioning.videos\/videos\/b.mp4 with these options/,
		);
		expect(sb.ledger.charges).toHaveLength(1);
	});
});

test("Idempotency None: the execution's Retry reads its job back (the link kept in the node context); a new run orders again", async () => {
	const workflowId = newWorkflow();
	const params = create({ idempotency: 'none' });
	const first = await runCaptioning(sb, params, {
		input: objects(['videos/c.mp4']),
		s3: credential(),
		workflowId,
	});
	const retried = await runCaptioning(sb, params, {
		input: objects(['videos/c.mp4']),
		s3: credential(),
		workflowId,
		mode: 'retry',
		contextData: first.contextData(),
	});
	expect(retried.items[0].json).toMatchObject({
		id: first.items[0].json.id,
		idempotent_replayed: true,
	});
	const again = await runCaptioning(sb, params, {
		input: objects(['videos/c.mp4']),
		s3: credential(),
		workflowId,
	});
	expect(again.items[0].json.idempotent_replayed).toBe(false);
	expect(sb.ledger.jobs.map((j) => j.idempotencyKey)).toEqual([null, null]);
});

test('Job → Get and Get Many show the S3 job without the signature too', async () => {
	const ordered = await runCaptioning(sb, create(), {
		input: objects(['videos/d.mp4']),
		s3: credential(),
	});
	const id = ordered.items[0].json.id as string;
	expect(String(sb.ledger.jobs[0].body.media_url)).toMatch(/X-Amz-Signature=/);
	const got = await runCaptioning(sb, {
		resource: 'job',
		operation: 'get',
		jobId: id,
	});
	const many = await runCaptioning(sb, {
		resource: 'job',
		operation: 'getAll',
		limit: 5,
	});
	expect((got.items[0].json.media as IDataObject).url).toBe(
		`${s3.endpoint}/${s3.bucket}/videos/d.mp4`,
	);
	expect(many.items.find((i) => i.json.id === id)?.json.media).toMatchObject({
		url: `${s3.endpoint}/${s3.bucket}/videos/d.mp4`,
	});
	expect(JSON.stringify([got.items, many.items])).not.toMatch(/X-Amz-/);
});

test('the signed link stays out of errors: a service message quoting it is cut to the URL without its query', async () => {
	sb.injectFault('POST /jobs', {
		status: 400,
		code: 'invalid_request',
		param: 'media_url',
		message: `media_url ${s3.endpoint}/b/k.mp4?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=S3RVER%2F20261124&X-Amz-Signature=abc123 is not reachable`,
	});
	const run = await runCaptioning(sb, create(), {
		input: objects(['videos/a.mp4']),
		s3: credential(),
	});
	expect(run.failure?.message).toBe(
		`media_url ${s3.endpoint}/b/k.mp4 is not reachable [HTTP 400 invalid_request]`,
	);
	expect(JSON.stringify(run.failure)).not.toMatch(/X-Amz-Signature|abc123/);
});
