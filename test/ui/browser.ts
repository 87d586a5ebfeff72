// Debian's Chromium (installed with apt-get when missing: browsers that npm packages download
// cannot be fetched here), driven headless by playwright-core against n8n's editor.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import type { Browser, Page } from 'playwright-core';
import { chromium, selectors } from 'playwright-core';

const run = promisify(execFile);
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

// n8n marks its markup with data-test-id (n8n's own Playwright tests do the same).
selectors.setTestIdAttribute('data-test-id');

export async function ensureChromium(): Promise<void> {
	if (existsSync(CHROMIUM)) return;
	const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
	await run('apt-get', ['update', '-qq'], {
		env,
		timeout: 10 * 60 * 1000,
		maxBuffer: 64 * 1024 * 1024,
	});
	await run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'chromium'], {
		env,
		timeout: 15 * 60 * 1000,
		maxBuffer: 64 * 1024 * 1024,
	});
}

export async function launch(): Promise<Browser> {
	return await chromium.launch({
		executablePath: CHROMIUM,
		args: ['--no-sandbox', '--disable-dev-shm-usage'],
	});
}

export interface EditorPage {
	page: Page;
	/** Page errors and console errors seen so far. */
	problems: string[];
	close(): Promise<void>;
}

/** A logged-in editor tab (the session cookie from n8n's own login route). */
export async function openEditor(
	browser: Browser,
	baseUrl: string,
	login: { email: string; password: string },
): Promise<EditorPage> {
	const context = await browser.newContext({
		ignoreHTTPSErrors: true,
		viewport: { width: 1280, height: 800 },
		deviceScaleFactor: 1,
	});
	const page = await context.newPage();
	const problems: string[] = [];
	page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
	page.on('console', (message) => {
		if (message.type() === 'error') problems.push(`console: ${message.text()}`);
	});
	const res = await page.request.post(`${baseUrl}/rest/login`, {
		data: { emailOrLdapLoginId: login.email, password: login.password },
	});
	if (res.status() !== 200) throw new Error(`login failed (${res.status()}): ${await res.text()}`);
	return { page, problems, close: async () => await context.close() };
}
