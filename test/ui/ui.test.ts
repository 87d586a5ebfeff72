// The nodes as users see them (npm run test:ui): n8n 2.41.1's editor (the e2e install) in headless
// Chromium from Debian, driven by playwright-core, against the sandbox. With UPDATE_SCREENSHOTS=1
// (npm run screenshots) it also writes README's pictures to docs/images/.
//
// Selectors are n8n's own data-test-id attributes, read from n8n 2.41.1's editor (the ones n8n's
// Playwright tests use): node-creator-plus-button, node-creator-search-bar, item-iterator-item,
// node-creator-item-name, canvas-node (with data-node-name), canvas-node-input-handle (with
// data-connection-type), canvas-handle-plus, node-issues, ndv, node-parameters,
// parameter-input-<name>, parameter-issues, node-webhooks, editCredential-modal,
// credential-save-button, credentials-config-container-test-success/-error.
import { mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { INodeParameters, INodeProperties, INodeTypeDescription } from 'n8n-workflow';
import { NodeHelpers } from 'n8n-workflow';
import type { Browser, Locator, Page } from 'playwright-core';

import { Captioning } from '../../nodes/Captioning/Captioning.node.js';
import { tlsPair } from '../helpers/https';
import type { S3Server } from '../helpers/s3Bucket';
import { startS3 } from '../helpers/s3Bucket';
import type { Sandbox } from '../helpers/sandbox';
import { createSandbox } from '../helpers/sandbox';
import { orderDirectly } from '../helpers/captioning';
import type { N8n } from '../real/instance';
import { createN8n, installN8n, tempJson } from '../real/instance';
import type { EditorPage } from './browser';
import { ensureChromium, launch, openEditor } from './browser';

const VERSION = '2.41.1';
/** The Captioning node's version that n8n gives a node added now. */
const NODE_VERSION = 1;
const CREDENTIAL_ID = 'captioningSandbox';
const S3_CREDENTIAL_ID = 'captioningS3Media';
const OWNER = { email: 'owner@example.com', password: 'Passw0rd-for-e2e' };
const root = path.resolve(__dirname, '../..');
const images = path.join(root, 'docs/images');
const UPDATE = process.env.UPDATE_SCREENSHOTS === '1';
const description = new Captioning().description as INodeTypeDescription;
const credentials = { captioningApi: { id: CREDENTIAL_ID, name: 'Captioning account' } };

/** Every resource → operation pair the node's description offers. */
function operations(): Array<{ resource: string; operation: string; label: string }> {
	const resources = description.properties.find((p) => p.name === 'resource')!.options as Array<{
		name: string;
		value: string;
	}>;
	return resources.flatMap((r) => {
		const op = description.properties.find(
			(p) => p.name === 'operation' && p.displayOptions?.show?.resource?.includes(r.value),
		)!;
		return (op.options as Array<{ name: string; value: string }>).map((o) => ({
			resource: r.value,
			operation: o.value,
			label: `${r.name}: ${o.name}`,
		}));
	});
}

/** What n8n's panel should show for these parameters (the node version new nodes get): fields and their defaults, collections. */
function expectedPanel(parameters: INodeParameters) {
	const node = { typeVersion: NODE_VERSION };
	const values =
		NodeHelpers.getNodeParameters(
			description.properties,
			parameters,
			true,
			false,
			node,
			description,
		) ?? {};
	const shown = description.properties.filter((p) =>
		NodeHelpers.displayParameter(values, p, node, description),
	);
	const byName = new Map<string, INodeProperties>();
	for (const p of shown) if (!byName.has(p.name)) byName.set(p.name, p);
	const all = [...byName.values()];
	return {
		fields: all.filter((p) => !['notice', 'collection', 'fixedCollection'].includes(p.type)),
		collections: all
			.filter((p) => ['collection', 'fixedCollection'].includes(p.type))
			.map((p) => p.displayName),
	};
}

/** The text a field shows for its value, else its default (options: the option's name); undefined when not comparable. */
function shownValue(p: INodeProperties, parameters: INodeParameters): string | undefined {
	const value = parameters[p.name] ?? p.default;
	if (p.type === 'options')
		return (p.options as Array<{ name: string; value: unknown }>).find((o) => o.value === value)
			?.name;
	if ((p.type === 'string' || p.type === 'number') && !String(value).startsWith('='))
		return String(value);
	return undefined;
}

describe(`n8n ${VERSION}'s editor`, () => {
	let sb: Sandbox;
	let s3: S3Server;
	let n8n: N8n;
	let browser: Browser;
	let editor: EditorPage;
	let page: Page;
	const ops = operations();

	const node = (name: string) =>
		page.locator(`[data-test-id="canvas-node"][data-node-name="${name}"]`);
	const openWorkflow = async (id: string) => {
		await page.goto(`${n8n.url}/workflow/${id}`);
		await page.getByTestId('canvas-node').first().waitFor();
	};
	const openNode = async (name: string) => {
		await node(name).dblclick();
		await page.getByTestId('ndv').waitFor();
		await page.getByTestId('node-parameters').waitFor();
	};
	const closeNode = async () => {
		await page.keyboard.press('Escape');
		await page.getByTestId('ndv').waitFor({ state: 'hidden' });
	};
	const picture = async (name: string, target?: Page | ReturnType<Page['locator']>) => {
		if (!UPDATE) return;
		mkdirSync(images, { recursive: true });
		await (target ?? page).screenshot({ path: path.join(images, `${name}.png`) });
	};
	/** Names of the parameter inputs in the open panel (n8n: data-test-id="parameter-input-<name>"). */
	const panelFields = async () =>
		await page.$$eval(
			'[data-test-id="node-parameters"] [data-test-id^="parameter-input-"]',
			(els) =>
				[
					...new Set(
						els
							// The Settings tab's inputs are there too, hidden.
							.filter((e) => (e as unknown as { checkVisibility(): boolean }).checkVisibility())
							.map((e) => e.getAttribute('data-test-id')!.slice('parameter-input-'.length)),
					),
				].filter((n) => !['field', 'value', 'key'].includes(n)),
		);
	/**
	 * The names the nodes panel lists for `text`, once it lists every name of `expected` (typed again
	 * while the panel is still settling, for up to 15 s): what it lists then, whatever it is.
	 */
	const search = async (text: string, expected: string[] = []) => {
		const deadline = Date.now() + 15000;
		for (;;) {
			await page.getByTestId('node-creator-search-bar').fill('');
			await page.getByTestId('node-creator-search-bar').pressSequentially(text, { delay: 30 });
			await page.waitForTimeout(500);
			const names = await page
				.getByTestId('item-iterator-item')
				.getByTestId('node-creator-item-name')
				.allInnerTexts();
			if (expected.every((name) => names.includes(name)) || Date.now() > deadline) return names;
		}
	};

	beforeAll(
		async () => {
			await ensureChromium();
			sb = await createSandbox({ webhook: { ca: tlsPair().cert } });
			s3 = await startS3();
			n8n = await createN8n(await installN8n(VERSION));
			await n8n.cli([
				'import:credentials',
				`--input=${tempJson('credentials.json', [
					{
						id: CREDENTIAL_ID,
						name: 'Captioning account',
						type: 'captioningApi',
						data: { apiKey: sb.keys.full, baseUrl: sb.baseUrl, webhookToken: 'ui-token' },
					},
					{
						id: S3_CREDENTIAL_ID,
						name: 'S3 media',
						type: 'captioningS3Api',
						data: {
							accessKeyId: s3.accessKeyId,
							secretAccessKey: s3.secretAccessKey,
							region: 'us-east-1',
							endpoint: s3.endpoint,
							forcePathStyle: true,
						},
					},
					// For the picture: Google Drive credentials as a user would have picked (never used).
					{
						id: 'googleDriveAccount',
						name: 'Google Drive account',
						type: 'googleDriveOAuth2Api',
						data: { clientId: 'picture', clientSecret: 'picture' },
					},
				])}`,
			]);
			/** An example as imported, each node given the credentials a user would pick. */
			const example = (file: string, id: string) => {
				const wf = JSON.parse(readFileSync(path.join(root, 'examples', file), 'utf8')) as {
					nodes: Array<{ type: string; credentials?: unknown }>;
				};
				for (const n of wf.nodes) {
					if (n.type.startsWith('n8n-nodes-captioning.')) n.credentials = credentials;
					if (n.type.startsWith('n8n-nodes-base.googleDrive'))
						n.credentials = {
							googleDriveOAuth2Api: { id: 'googleDriveAccount', name: 'Google Drive account' },
						};
					// The folder a user picks after importing (the template holds a placeholder its note names).
					if (n.type === 'n8n-nodes-base.googleDriveTrigger')
						(n as unknown as { parameters: Record<string, unknown> }).parameters.folderToWatch = {
							__rl: true,
							mode: 'id',
							value: '1VideosFolderId',
						};
				}
				return tempJson(`${id}.json`, { ...wf, id });
			};
			n8n.importWorkflows([example('google-drive-captions.json', 'uiDriveExample01')]);
			n8n.importWorkflows([example('store-captions.json', 'uiStoreCaptions1')]);
			// One Captioning node per operation as n8n adds it (defaults), a Job → Create filled in, one with no Media URL.
			const nodes = [
				...ops.map((o, i) => ({
					id: `op${i}`,
					name: o.label,
					type: 'n8n-nodes-captioning.captioning',
					typeVersion: NODE_VERSION,
					position: [i * 220, 0],
					parameters: { resource: o.resource, operation: o.operation },
					credentials,
				})),
				{
					id: 'valid',
					name: 'Filled In',
					type: 'n8n-nodes-captioning.captioning',
					typeVersion: NODE_VERSION,
					position: [0, 300],
					parameters: {
						resource: 'job',
						operation: 'create',
						source: 'url',
						mediaUrl: 'https://media.example.com/talk.mp4',
					},
					credentials,
				},
				{
					id: 'empty',
					name: 'No Media URL',
					type: 'n8n-nodes-captioning.captioning',
					typeVersion: NODE_VERSION,
					position: [220, 300],
					parameters: { resource: 'job', operation: 'create', source: 'url', mediaUrl: '' },
					credentials,
				},
				// Job → Create with Source S3 Object, as a user switches to it: its fields and a second credential.
				{
					id: 's3',
					name: 'S3 Object',
					type: 'n8n-nodes-captioning.captioning',
					typeVersion: NODE_VERSION,
					position: [0, 600],
					parameters: { resource: 'job', operation: 'create', source: 's3' },
					credentials,
				},
				{
					id: 'agent',
					name: 'AI Agent',
					type: '@n8n/n8n-nodes-langchain.agent',
					typeVersion: 3.1,
					position: [440, 300],
					parameters: {},
				},
				// As a user connects it: Job → Get Captions as the agent's tool, the Job ID from the model.
				{
					id: 'tool',
					name: 'Captioning Tool',
					type: 'n8n-nodes-captioning.captioningTool',
					typeVersion: NODE_VERSION,
					position: [440, 500],
					parameters: {
						resource: 'job',
						operation: 'getCaptions',
						jobId: {
							__rl: true,
							mode: 'id',
							value: "={{ $fromAI('job_id', 'The id of the caption job', 'string') }}",
						},
					},
					credentials,
				},
			];
			const connections = {
				'Captioning Tool': { ai_tool: [[{ node: 'AI Agent', type: 'ai_tool', index: 0 }]] },
			};
			n8n.importWorkflows([
				tempJson('ops.json', {
					id: 'uiEveryOperation',
					name: 'UI: every operation',
					nodes,
					connections,
					settings: {},
				}),
			]);
			// Orders with a Custom Key: run twice, the second run replays the first order (a hint says so).
			n8n.importWorkflows([
				tempJson('hints.json', {
					id: 'uiExecutionHints',
					name: 'UI: execution hints',
					settings: {},
					nodes: [
						{
							id: 'h-start',
							name: 'Start',
							type: 'n8n-nodes-base.manualTrigger',
							typeVersion: 1,
							position: [0, 0],
							parameters: {},
						},
						{
							id: 'h-order',
							name: 'Order Captions',
							type: 'n8n-nodes-captioning.captioning',
							typeVersion: NODE_VERSION,
							position: [220, 0],
							parameters: {
								resource: 'job',
								operation: 'create',
								source: 'url',
								mediaUrl: 'https://media.example.com/hint.mp4',
								title: 'Weekly Show',
								idempotency: 'custom',
								idempotencyKey: 'ui-hint-1',
							},
							credentials,
						},
					],
					connections: { Start: { main: [[{ node: 'Order Captions', type: 'main', index: 0 }]] } },
				}),
			]);
			await n8n.start();
			await n8n.rest('GET', '/workflows'); // sets up the owner
			browser = await launch();
			editor = await openEditor(browser, n8n.url, OWNER);
			page = editor.page;
		},
		20 * 60 * 1000,
	);

	afterAll(async () => {
		await editor?.close();
		await browser?.close();
		await n8n?.stop();
		await sb?.close();
		await s3?.close();
	});

	test('the nodes panel finds both nodes with their icon by "Caption"; the AI Agent is offered the node as a tool', async () => {
		await page.goto(`${n8n.url}/workflow/new`);
		await page.getByTestId('node-creator-plus-button').click();
		expect(await search('Caption', ['Captioning', 'Captioning Polling'])).toEqual(
			expect.arrayContaining(['Captioning', 'Captioning Polling']),
		);
		const icons = await page
			.getByTestId('item-iterator-item')
			.locator('img')
			.evaluateAll((els) => els.map((e) => e.getAttribute('src') ?? ''));
		expect(
			icons.filter((src) => src.includes('icons/n8n-nodes-captioning/')).length,
		).toBeGreaterThanOrEqual(2);
		await picture('nodes-panel', page.getByTestId('node-creator'));
		await page.keyboard.press('Escape');
		await page.getByTestId('node-creator').waitFor({ state: 'hidden' });

		await openWorkflow('uiEveryOperation');
		const toolHandle = node('AI Agent').locator(
			'[data-test-id="canvas-node-input-handle"][data-connection-type="ai_tool"] [data-test-id="canvas-handle-plus"]',
		);
		// A click while the canvas still settles can open the regular panel (2 of about 20 CI runs):
		// close it and click the handle again, up to three times.
		let names: string[] = [];
		for (let attempt = 0; attempt < 3 && !names.includes('Captioning Tool'); attempt++) {
			if (attempt > 0) {
				await page.keyboard.press('Escape');
				await page.getByTestId('node-creator').waitFor({ state: 'hidden' });
				await page.waitForTimeout(1000);
			}
			await toolHandle.click();
			names = await search('Caption', ['Captioning Tool']);
		}
		expect(names).toContain('Captioning Tool');
		expect(names).not.toContain('Captioning Polling');
		await page.keyboard.press('Escape');
	}, 180000);

	test("Captioning Tool (Get Captions for an AI Agent): its panel shows the tool's description, the Job ID from the model, and Put Captions In", async () => {
		await openWorkflow('uiEveryOperation');
		await openNode('Captioning Tool');
		const fields = await panelFields();
		expect(fields).toEqual(
			expect.arrayContaining(['descriptionType', 'jobId', 'formats', 'captionsAs']),
		);
		const text = await page.getByTestId('node-parameters').innerText();
		expect(text).toContain('Put Captions In');
		await expect(
			page.getByTestId('parameter-input-captionsAs').locator('input').first().inputValue(),
		).resolves.toBe('Binary Files');
		await closeNode();
	});

	test.each(ops.map((o) => [o.label, o]))(
		'%s: the panel shows exactly its fields, with their defaults',
		async (_label, o) => {
			await openWorkflow('uiEveryOperation');
			await openNode(o.label);
			const parameters = { resource: o.resource, operation: o.operation };
			const expected = expectedPanel(parameters);
			expect((await panelFields()).sort()).toEqual(expected.fields.map((p) => p.name).sort());
			const text = await page.getByTestId('node-parameters').innerText();
			for (const collection of expected.collections) expect(text).toContain(collection);
			for (const field of expected.fields) {
				const want = shownValue(field, parameters);
				if (want === undefined) continue;
				const input = page
					.getByTestId(`parameter-input-${field.name}`)
					.locator('input, textarea')
					.first();
				expect({ field: field.name, shown: await input.inputValue() }).toEqual({
					field: field.name,
					shown: want,
				});
			}
			if (o.resource === 'job' && o.operation === 'create')
				await picture('job-create-panel', page.getByTestId('ndv'));
			await closeNode();
		},
	);

	test('Job → Get: the Job field lists the newest jobs by title, status and date; a search narrows them', async () => {
		const lecture = await orderDirectly(sb, { title: 'Week 1 lecture' });
		await orderDirectly(sb, { title: 'Panel: the future of captions' });
		sb.completeJob(lecture);
		await openWorkflow('uiEveryOperation');
		await openNode('Job: Get');
		await page.getByTestId('rlc-input').first().click();
		const items = page.getByTestId('rlc-item');
		await items.first().waitFor();
		const names = (await items.allInnerTexts()).map((t) => t.trim());
		expect(names.slice(0, 2)).toEqual([
			expect.stringMatching(
				/^Panel: the future of captions · (queued|processing|completed) · \d{4}-\d\d-\d\d \d\d:\d\d UTC$/,
			),
			expect.stringMatching(/^Week 1 lecture · completed · /),
		]);
		await picture('job-locator-list', page.getByTestId('ndv'));
		await page.getByTestId('rlc-search').pressSequentially('lecture', { delay: 30 });
		// The list reloads with the search: wait until only matches are left.
		const deadline = Date.now() + 15000;
		let shown: string[] = [];
		while (Date.now() < deadline) {
			shown = await items.allInnerTexts();
			if (shown.length > 0 && shown.every((t) => /lecture/i.test(t))) break;
			await page.waitForTimeout(250);
		}
		expect(shown.map((t) => t.trim().split(' · ')[0])).toContain('Week 1 lecture');
		expect((await items.allInnerTexts()).every((t) => /lecture/i.test(t))).toBe(true);
		// Escape closes the list first, then the panel.
		await page.keyboard.press('Escape');
		await closeNode();
	});

	test('Job → Create with Source S3 Object: Bucket Name, Object Key (required), Link Valid For 24, and the Captioning S3 Media credential to pick', async () => {
		await openWorkflow('uiEveryOperation');
		const parameters = { resource: 'job', operation: 'create', source: 's3' };
		await openNode('S3 Object');
		const expected = expectedPanel(parameters);
		expect(expected.fields.map((p) => p.name)).toEqual(
			expect.arrayContaining(['s3Bucket', 's3Key', 's3LinkHours']),
		);
		expect((await panelFields()).sort()).toEqual(expected.fields.map((p) => p.name).sort());
		await expect(
			page.getByTestId('parameter-input-s3LinkHours').locator('input').first().inputValue(),
		).resolves.toBe('24');
		const text = await page.getByTestId('ndv').innerText();
		expect(text).toContain('Captioning S3 Media');
		expect(text).toContain('Link Valid For (Hours)');
		await closeNode();
	});

	test("a node filled in with valid values has no issues; an empty Media URL gets n8n's required-field warning", async () => {
		await openWorkflow('uiEveryOperation');
		await expect(node('Filled In').getByTestId('node-issues').count()).resolves.toBe(0);
		await expect(node('No Media URL').getByTestId('node-issues').count()).resolves.toBe(1);
		await openNode('No Media URL');
		const issues = page
			.getByTestId('parameter-input-mediaUrl')
			.locator('xpath=ancestor::*[@data-test-id="parameter-item"][1]')
			.getByTestId('parameter-issues');
		await issues.hover();
		await expect(
			page.getByText('Parameter "Media URL" is required.').first().isVisible(),
		).resolves.toBe(true);
		await closeNode();
	});

	test("an order that replayed an earlier job shows the hint above the output, in n8n's words", async () => {
		await openWorkflow('uiExecutionHints');
		const output = page.getByTestId('ndv');
		// The first run sends its order; the second finds it in the job list (no second POST).
		const orders = () =>
			sb.ledger.requests.filter((r) => r.route === 'POST /jobs' || r.route === 'GET /jobs').length;
		const shown = async () =>
			`node panel: ${(await output.innerText().catch(() => '')).slice(0, 1500)}`;
		try {
			// The whole workflow, twice, from the canvas. (In n8n 2.41.1's node panel, a second "Execute
			// step" after the first failed with "Cannot read properties of null (reading 'Start')".)
			for (let run = 1; run <= 2; run++) {
				const before = orders();
				await page.getByTestId('execute-workflow-button').first().click();
				for (const deadline = Date.now() + 60000; orders() === before; ) {
					if (Date.now() > deadline)
						throw new Error(`run ${run} neither sent nor looked up its order`);
					await page.waitForTimeout(250);
				}
				await page.waitForTimeout(3000);
			}
			await openNode('Order Captions');
			const hint = output.getByTestId('node-hint').first();
			await hint.waitFor({ timeout: 30000 }).catch(async () => {
				throw new Error(`no hint after the second run; ${await shown()}`);
			});
			await expect(hint.innerText()).resolves.toMatch(
				/1 of 1 order replayed a job ordered before \(Idempotency\), so nothing was charged for it/,
			);
			await picture('execution-hint', output);
		} catch (error) {
			// One file, replaced by each failing run: what the editor showed.
			await page
				.screenshot({ path: path.join(tmpdir(), 'captioning-ui-hint-failure.png') })
				.catch(() => undefined);
			throw error;
		}
		await closeNode();
	}, 180000);

	test("the trigger's panel shows its notice and the Production URL to paste into Job → Create", async () => {
		await openWorkflow('uiStoreCaptions1');
		await openNode('Captions Ready');
		await expect(page.getByTestId('node-parameters').innerText()).resolves.toContain(
			"Put this trigger's Production URL in Job → Create's Options → Webhook URL",
		);
		// "Webhook URLs" (no test id in 2.41.1) opens the URLs; "Production URL" shows the one to paste.
		const ndv = page.getByTestId('ndv');
		await ndv.getByText('Webhook URLs', { exact: true }).click();
		await ndv.getByText('Production URL', { exact: true }).click();
		await expect(
			ndv
				.getByText(`${n8n.url}/webhook/3f0c1b7e-6a2d-4c55-9e1a-7b8c9d0e1f2a/captioning`)
				.first()
				.waitFor({ timeout: 10000 }),
		).resolves.toBeUndefined();
		await picture('trigger-panel', page.getByTestId('ndv'));
		await closeNode();
	});

	/** Fills a field of a saved credential, saves it (which runs n8n's credential test) and reads the verdict the dialog shows. */
	const saveCredential = async (id: string, field: string, value: string) => {
		await page.goto(`${n8n.url}/home/credentials/${id}`);
		const modal = page.getByTestId('editCredential-modal');
		const failed = modal
			.getByText('Couldn’t connect with these settings')
			.or(modal.getByText("Couldn't connect with these settings"))
			.first();
		const succeeded = modal.getByText('Connection tested successfully').first();
		/** Waits for a banner; when none shows, the error holds what the dialog shows instead. */
		const shown = async (banner: Locator, name: string, timeout: number) =>
			await banner.waitFor({ timeout }).catch(async () => {
				throw new Error(
					`no banner "${name}" in ${timeout} ms; the dialog shows:\n${await modal.innerText()}`,
				);
			});
		// Opening the dialog tests the saved value: wait for its banner, or that verdict, come late,
		// replaces the one of the value saved here (seen: "Connection tested successfully" after a
		// wrong secret had been refused, when the first test took longer than a wait on its response).
		await shown(failed.or(succeeded).first(), 'the saved value tested', 60000);
		await modal.getByTestId(`parameter-input-${field}`).locator('input').first().fill(value);
		// Saving runs n8n's credential test: read the banner it leaves, for this value's test.
		const tested = page.waitForResponse(
			(r) =>
				r.url().includes('/rest/credentials/test') &&
				(r.request().postData() ?? '').includes(value),
		);
		await modal.getByTestId('credential-save-button').click();
		const verdict = (await (await tested).json()) as { data: { status: string; message: string } };
		if (verdict.data.status === 'OK') {
			await shown(succeeded, 'Connection tested successfully', 15000);
			return { modal, text: 'Connection tested successfully' };
		}
		// n8n 2.41.1: "Couldn't connect with these settings", and the message under "More details".
		await shown(failed, "Couldn't connect with these settings", 15000);
		// The message sits under "More details": open them until it shows (the toggle may come after
		// the banner, and a banner drawn again shows them folded).
		const message = page.getByText(verdict.data.message).first();
		const details = modal.getByText('More details');
		const deadline = Date.now() + 20000;
		while (!(await message.isVisible())) {
			if (Date.now() > deadline)
				throw new Error(
					`the dialog never showed "${verdict.data.message}"; it shows:\n${await modal.innerText()}`,
				);
			if (await details.isVisible()) await details.click().catch(() => undefined);
			await page.waitForTimeout(500);
		}
		return { modal, text: verdict.data.message };
	};

	test('the credential dialog: the sandbox key works; a wrong key and a revoked key get our messages', async () => {
		const tryKey = async (apiKey: string) => await saveCredential(CREDENTIAL_ID, 'apiKey', apiKey);
		expect((await tryKey('sk_wrong_key')).text).toMatch(/The API key is wrong \(401\)/);
		expect((await tryKey(sb.keys.revoked)).text).toMatch(/revoked/);
		const ok = await tryKey(sb.keys.full);
		expect(ok.text).toMatch(/Connection tested successfully/i);
		// The trigger's token lives here, masked, beside the key.
		await expect(ok.modal.innerText()).resolves.toContain('Webhook Secret Token');
		await picture('credential-dialog', ok.modal);
	});

	test("the Captioning S3 Media credential's dialog: tested through n8n's own helpers against a real S3 server, a wrong secret named", async () => {
		expect(
			(await saveCredential(S3_CREDENTIAL_ID, 'secretAccessKey', 'not-the-secret')).text,
		).toMatch(/^S3 refused the key \(403\): copy Access Key ID and Secret Access Key again/);
		expect(
			(await saveCredential(S3_CREDENTIAL_ID, 'secretAccessKey', s3.secretAccessKey)).text,
		).toMatch(/Connection tested successfully|Connection successful/i);
	});

	test('the Drive example on the canvas; no page or console error came from our nodes', async () => {
		await openWorkflow('uiDriveExample01');
		await page.getByTestId('zoom-to-fit').click();
		await page.waitForTimeout(500);
		// The canvas with n8n's header above it whole (the workflow's name, the Editor / Executions
		// tabs that overlap the canvas's top edge, Publish): no control cut in half.
		const box = (await page.getByTestId('canvas-wrapper').boundingBox())!;
		if (UPDATE)
			await page.screenshot({
				path: path.join(images, 'drive-example.png'),
				clip: { x: box.x, y: 0, width: box.width, height: box.y + box.height },
			});
		for (const name of ['New Video in Folder', 'Order Captions and Wait', 'Get Captions'])
			await expect(node(name).getByTestId('node-issues').count()).resolves.toBe(0);
		expect(editor.problems.filter((p) => /captioning/i.test(p))).toEqual([]);
	});
});
