// A request that got no answer, and why: the network (retried), a certificate the connection
// refused, n8n's own policy, or an error of n8n's own (none of them tried again). Each becomes one
// NodeApiError in words, looked up through the wrappers n8n puts around the HTTP client's errors.
import type { IDataObject, INode, NodeApiError } from 'n8n-workflow';
import { UserError } from 'n8n-workflow';

import { apiError } from './errors';
import { withoutSignatures } from './secrets';

/** The request an error names: its target (never a URL with a signature), what to look at, its item. */
export interface Unanswered {
	target: string;
	/** Where to look when no answer comes (default: the Base URL in the credentials). */
	lookAt?: string;
	itemIndex?: number;
}

/** An error for a request that got no answer: no status, no field, no request id. */
const unanswered = (
	node: INode,
	code: string,
	message: string,
	description: string,
	itemIndex?: number,
) =>
	apiError(node, { httpCode: '', code, message, param: '', requestId: '' }, description, itemIndex);

/** A request that got no response (refused, reset, timed out, DNS). */
export function networkError(
	node: INode,
	cause: unknown,
	attempts: number,
	{ target, itemIndex, lookAt = 'the Base URL in the credentials' }: Unanswered,
): NodeApiError {
	const code = networkCodeOf(cause) ?? 'ECONNECTION';
	const description = `No response arrived${attempts > 1 ? ` in ${attempts} attempts` : ''}. Check ${lookAt}, the network and any proxy between n8n and ${target}.`;
	return unanswered(node, code, `Could not reach ${target} (${code})`, description, itemIndex);
}

/** A failure and the errors it wraps (n8n wraps the HTTP client's in its own), outermost first. */
function chain(cause: unknown): IDataObject[] {
	const levels: IDataObject[] = [];
	let level = cause as IDataObject | undefined;
	while (level && typeof level === 'object' && !levels.includes(level) && levels.length < 6) {
		levels.push(level);
		level = level.cause as IDataObject | undefined;
	}
	return levels;
}

const NETWORK_CODE = /^(E[A-Z_]+|UND_ERR_[A-Z_]+)$/;

/** The error code of a network failure, looked up through n8n's wrappers (2.x keeps the cause; 1.x only the code, as httpCode). */
export function networkCodeOf(cause: unknown): string | undefined {
	return chain(cause)
		.flatMap((level) => [level.code, level.httpCode])
		.find((c): c is string => typeof c === 'string' && NETWORK_CODE.test(c));
}

/** Failures of a connection that never reached the host. */
const NEVER_REACHED = ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN'];

/**
 * Whether a request that got no answer may have reached the service: anything but a request n8n
 * refused to send, a certificate the connection refused, or a host that could not be reached.
 */
export const mayHaveReached = (cause: unknown) =>
	!NEVER_REACHED.includes(networkCodeOf(cause) ?? '') &&
	!certificateProblem(cause) &&
	!refusedByN8n(cause);

/** Whether n8n refused to send the request: a user's error of n8n's (its SSRF policy, n8n 2.x), here or wrapped. */
export const refusedByN8n = (cause: unknown) =>
	chain(cause).some((level) => level instanceof UserError);

/** What a certificate the TLS connection refused is, by Node's code for it. */
const CERTIFICATE_WORDS: Record<string, string> = {
	CERT_HAS_EXPIRED: 'has expired',
	CERT_NOT_YET_VALID: 'is not valid yet',
	DEPTH_ZERO_SELF_SIGNED_CERT: 'is self-signed: no authority n8n trusts issued it',
	SELF_SIGNED_CERT_IN_CHAIN: 'comes from a self-signed authority n8n does not trust',
	UNABLE_TO_VERIFY_LEAF_SIGNATURE:
		'was issued by an authority n8n does not trust (or the server leaves out its intermediate certificates)',
	UNABLE_TO_GET_ISSUER_CERT: 'was issued by an authority n8n does not know',
	ERR_TLS_CERT_ALTNAME_INVALID: 'is for another host name',
	CERT_REVOKED: 'was revoked',
	CERT_UNTRUSTED: 'is not trusted',
	CERT_REJECTED: 'was rejected',
};

/** The code of a certificate the connection refused (through n8n's wrappers, or in its words on 1.x), if that is the failure. */
export function certificateProblem(cause: unknown): string | undefined {
	const said = chain(cause).flatMap((level) => [level.code, level.httpCode, level.message]);
	return Object.keys(CERTIFICATE_WORDS).find((code) =>
		said.some((value) => typeof value === 'string' && value.includes(code)),
	);
}

/** A connection the server's certificate ended: nothing was sent, and a retry would meet the same. */
export function certificateError(
	node: INode,
	cause: unknown,
	{ target, itemIndex }: Unanswered,
): NodeApiError {
	const code = certificateProblem(cause)!;
	return unanswered(
		node,
		code,
		`The TLS certificate of ${target} ${CERTIFICATE_WORDS[code]} (${code})`,
		'The connection ended at the certificate, before anything was sent, so it was not tried again. Renew the certificate on that server, or check the Base URL; a service with an authority of its own needs n8n to trust it (NODE_EXTRA_CA_CERTS).',
		itemIndex,
	);
}

/** A request that failed inside n8n, not on the network (n8n's policy refused it, or its own error): what n8n said. */
export function notSentError(
	node: INode,
	cause: unknown,
	{ target, itemIndex }: Unanswered,
): NodeApiError {
	const levels = chain(cause);
	/** What the levels say under `key`, outermost first. */
	const words = (key: 'message' | 'description') =>
		levels.map((level) => level[key]).filter((w): w is string => typeof w === 'string' && w !== '');
	// The innermost message is n8n's own (its wrappers repeat or generalise it).
	const said = words('message').at(-1) ?? 'an error without a message';
	const advice = words('description')[0];
	const policy = refusedByN8n(cause);
	return unanswered(
		node,
		'not_sent',
		`n8n ${policy ? 'did not send' : 'could not complete'} the request to ${target}: ${withoutSignatures(said)}`,
		(advice ? `${advice} ` : '') +
			(policy
				? "n8n's own policy refused the request before it left (an n8n administrator sets which addresses n8n may call), so it was not tried again. Nothing reached the service."
				: 'n8n stopped the request with an error of its own, not a network failure, so it was not tried again.'),
		itemIndex,
	);
}
