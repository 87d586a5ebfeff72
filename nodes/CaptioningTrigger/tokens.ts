// The tokens a Captioning Trigger takes, kept in its static data as digests: the workspace's token
// for its URL (what Job → Create adds), learnt once when the workflow is activated, and the
// credentials' own Webhook Secret Token, a replaced one for a week after the trigger first meets
// its successor. A delivery is decided by its token alone: no request, and no credential problem
// can refuse a token already known.
import type { IDataObject, IHookFunctions, IWebhookFunctions } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';
import { createHash } from 'node:crypto';

import { workspaceToken } from '../Captioning/model/events';
import { apiRequest, CREDENTIAL_NAME } from '../Captioning/transport';

/** How long a replaced Webhook Secret Token is still taken: the events of jobs ordered before. */
const REPLACED_TAKEN_MS = 7 * 24 * 3600000;

interface Tokens {
	/** Digests of the workspace tokens of this trigger's URL (a credential moved to another workspace adds one). */
	workspace?: string[];
	/** Digests of the credentials' own tokens: 0 while it is theirs, else until when it is taken. */
	own?: Record<string, number>;
}

const digestOf = (token: string) => createHash('sha256').update(token, 'utf8').digest('hex');

/** Notes the credentials' own token as it is now: a replaced one is taken for a week more. */
function rememberOwn(tokens: Tokens, own: string): void {
	const owned = (tokens.own ??= {});
	const current = own ? digestOf(own) : '';
	for (const [digest, until] of Object.entries(owned)) {
		if (digest === current) continue;
		if (until === 0) owned[digest] = Date.now() + REPLACED_TAKEN_MS;
		else if (until < Date.now()) delete owned[digest];
	}
	if (current && owned[current] !== 0) owned[current] = 0;
}

/**
 * Activation: the workspace token of this trigger's URL, from the account its credentials read.
 * Once known it stays (a failed read at a later activation, e.g. n8n's start, changes nothing).
 */
export async function learnTokens(ctx: IHookFunctions): Promise<void> {
	const tokens = ctx.getWorkflowStaticData('node') as Tokens;
	const url = ctx.getNodeWebhookUrl('default') ?? '';
	try {
		const { body } = await apiRequest<{ workspace: { id: string } }>(ctx, 'GET', '/account');
		const digest = digestOf(workspaceToken(body.workspace.id, url));
		if (!tokens.workspace?.includes(digest))
			tokens.workspace = [digest, ...(tokens.workspace ?? [])].slice(0, 5);
	} catch (error) {
		if (!tokens.workspace?.length)
			throw new NodeOperationError(ctx.getNode(), error as Error, {
				description:
					'When its workflow is activated, the Captioning Trigger reads the account once, to learn the token of its workspace. Check the credentials, then activate the workflow again.',
			});
	}
	rememberOwn(tokens, String((await ctx.getCredentials(CREDENTIAL_NAME)).webhookToken ?? ''));
}

/** Whether a token's digest is one the trigger takes now. */
function taken(tokens: Tokens, digest: string): boolean {
	const until = tokens.own?.[digest];
	return tokens.workspace?.includes(digest) === true || until === 0 || (until ?? 0) > Date.now();
}

/**
 * Whether a delivery's token is one this trigger takes. A known one is decided from the trigger's
 * static data alone; only an unknown one reads the credentials (their own token may have changed).
 */
export async function takesToken(ctx: IWebhookFunctions): Promise<boolean> {
	const given = (ctx.getQueryData() as IDataObject).token;
	if (typeof given !== 'string' || given === '') return false;
	const tokens = ctx.getWorkflowStaticData('node') as Tokens;
	const digest = digestOf(given);
	if (taken(tokens, digest)) return true;
	const own = await ctx.getCredentials(CREDENTIAL_NAME).then(
		(credentials) => String(credentials.webhookToken ?? ''),
		() => '',
	);
	if (own && digestOf(own) === digest) rememberOwn(tokens, own);
	return taken(tokens, digest);
}
