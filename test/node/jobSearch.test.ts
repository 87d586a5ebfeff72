// The Job field's list (Job → Get, Job → Get Captions): what the editor shows when it opens the
// list, searches it and scrolls, through n8n-core's LoadOptionsContext against the sandbox. The
// editor suite (test/ui) opens the real list in real n8n.
import { LoadOptionsContext } from 'n8n-core';
import type { INodeListSearchResult } from 'n8n-workflow';
import { Workflow } from 'n8n-workflow';

import { Captioning } from '../../nodes/Captioning/Captioning.node';
import { additionalDataFor, HarnessNodeTypes, node } from '../engine/workflow';
import { orderDirectly } from '../helpers/captioning';
import type { Sandbox } from '../helpers/sandbox';
import { useSandbox } from '../helpers/sandbox';

let sb: Sandbox;
useSandbox((s) => (sb = s));

/** What the editor gets for the Job list of a Job → Get node with this key. */
async function searchJobs(
	key: string,
	filter?: string,
	paginationToken?: string,
): Promise<INodeListSearchResult> {
	const captioning = new Captioning();
	const getNode = node(
		'Captioning',
		'captioning',
		{ resource: 'job', operation: 'get' },
		{
			credentials: { captioningApi: { id: '1', name: 'Captioning' } },
		},
	);
	const workflow = new Workflow({
		nodes: [getNode],
		connections: {},
		active: false,
		nodeTypes: new HarnessNodeTypes({ captioning }),
	});
	const context = new LoadOptionsContext(
		workflow,
		getNode,
		additionalDataFor({ captioningApi: { apiKey: key, baseUrl: sb.baseUrl } }, 'editor'),
		'parameters.jobId',
	);
	return await captioning.methods.listSearch.searchJobs.call(context, filter, paginationToken);
}

test('the newest jobs first, each by title, status and date, with its ID as the value', async () => {
	const lecture = await orderDirectly(sb, { title: 'Week 1 lecture' });
	const panel = await orderDirectly(sb, { title: 'Panel: the future of captions' });
	sb.completeJob(lecture);
	const { results } = await searchJobs(sb.keys.full);
	expect(results.slice(0, 2)).toEqual([
		{
			name: expect.stringMatching(
				/^Panel: the future of captions · queued · \d{4}-\d\d-\d\d \d\d:\d\d UTC$/,
			),
			value: panel,
		},
		{ name: expect.stringMatching(/^Week 1 lecture · completed · /), value: lecture },
	]);
});

test('a search keeps the jobs whose title holds it, or whose ID starts with it', async () => {
	const lecture = await orderDirectly(sb, { title: 'Week 2 Lecture' });
	await orderDirectly(sb, { title: 'Keynote' });
	expect((await searchJobs(sb.keys.full, 'week 2 lec')).results.map((r) => r.value)).toEqual([
		lecture,
	]);
	expect((await searchJobs(sb.keys.full, lecture.slice(0, 8))).results.map((r) => r.value)).toEqual(
		[lecture],
	);
});

test('scrolling reads the next page after the last job read, one read per page', async () => {
	const key = sb.keys.otherWorkspace;
	for (let n = 0; n < 250; n++) await orderDirectly(sb, { title: `Episode ${n}` }, key);
	sb.resetLedger();
	const first = await searchJobs(key);
	expect(first.results).toHaveLength(100);
	expect(first.paginationToken).toBe(first.results[99].value);
	const second = await searchJobs(key, undefined, first.paginationToken);
	expect(second.results).toHaveLength(100);
	expect(second.results.some((r) => first.results.some((f) => f.value === r.value))).toBe(false);
	expect(sb.ledger.requests.map((r) => [r.route, r.query.limit, r.query.starting_after])).toEqual([
		['GET /jobs', '100', undefined],
		['GET /jobs', '100', first.paginationToken],
	]);
});

test('a wrong key says so in the editor, as every other request does', async () => {
	await expect(searchJobs('sk_wrong')).rejects.toThrow(/API key/i);
});
