// Reads an input binary field as n8n stores it: a stream from the binary store where the file
// has an id (filesystem, S3 modes), the in-memory buffer otherwise. Never the whole file where a stream exists.
import type { IBinaryData, IExecuteFunctions, INodeProperties } from 'n8n-workflow';
import { BINARY_ENCODING } from 'n8n-workflow';
import { createHash } from 'node:crypto';

import type { FileBody } from '../model/types';
import { refuse } from '../transport/errors';
import { MAX_UPLOAD_BYTES } from '../model/types';

/** The binary input field (Upload → Create, Job → Create's Binary File source). */
export const inputFileField: INodeProperties = {
	displayName: 'Input Data Field Name',
	name: 'binaryPropertyName',
	type: 'string',
	default: 'data',
	required: true,
	placeholder: 'e.g. data',
	hint: 'The name of the input field containing the media file',
	description: 'The binary field holding the video or audio file, which is streamed to the service',
};

/** Read size for files from the binary store. */
const STREAM_CHUNK_BYTES = 256 * 1024;

export interface InputFile {
	fileName: string;
	mimeType: string;
	size: number;
	/** Its binary-store id, where it has one: the one name no other file shares. */
	binaryId?: string;
	/** Opens the bytes afresh (a retry needs a new stream). */
	open: () => Promise<FileBody>;
}

/** The file in the item's Input Data Field Name, refused when missing or over the service's size limit. */
export async function readInputFile(ctx: IExecuteFunctions, itemIndex: number): Promise<InputFile> {
	const field = ctx.getNodeParameter('binaryPropertyName', itemIndex) as string;
	const item = ctx.getInputData()[itemIndex];
	const available = Object.keys(item.binary ?? {});
	if (!item.binary?.[field])
		refuse(
			ctx,
			itemIndex,
			`Input Data Field Name "${field}" holds no file in item ${itemIndex}`,
			available.length
				? `This item has files in: ${available.join(', ')}. Set Input Data Field Name to one of them.`
				: 'This item has no binary data. Put a node that outputs a file (Google Drive, S3, Read Files From Disk, HTTP Request) before this one.',
		);
	const binary: IBinaryData = ctx.helpers.assertBinaryData(itemIndex, field);
	const id = binary.id;
	const file: InputFile = {
		fileName: binary.fileName ?? 'media',
		mimeType: binary.mimeType || 'application/octet-stream',
		size: id
			? Number((await ctx.helpers.getBinaryMetadata(id)).fileSize)
			: Buffer.byteLength(binary.data, BINARY_ENCODING),
		binaryId: id,
		open: async () =>
			id
				? await ctx.helpers.getBinaryStream(id, STREAM_CHUNK_BYTES)
				: await ctx.helpers.getBinaryDataBuffer(itemIndex, field),
	};
	if (file.size > MAX_UPLOAD_BYTES)
		refuse(
			ctx,
			itemIndex,
			`The file "${file.fileName}" is too large to upload (${file.size} bytes)`,
			`The service accepts files of up to ${MAX_UPLOAD_BYTES} bytes (5.24 GB). Compress or split the media, or host it and use Source: Media URL. Nothing was uploaded.`,
		);
	return file;
}

/**
 * The SHA-256 of the file's first `maxBytes` (all of it by default), read as a stream (memory stays
 * flat): what tells a repeat of an order from a new one.
 */
export async function fileSha256(file: InputFile, maxBytes = Infinity): Promise<string> {
	const hash = createHash('sha256');
	const body = await file.open();
	let read = 0;
	// Leaving the loop early destroys the stream.
	for await (const chunk of Buffer.isBuffer(body) ? [body] : body) {
		const part = (chunk as Buffer).subarray(0, maxBytes - read);
		hash.update(part);
		read += part.length;
		if (read >= maxBytes) break;
	}
	return hash.digest('hex');
}

/** The file's size and the SHA-256 of its first MiB: equal for a file sent before, rarely for another. */
export async function fileProbe(file: InputFile): Promise<string> {
	return `${file.size}:${await fileSha256(file, 1024 * 1024)}`;
}

/** The file, opened so that each read hashes the bytes on their way: its SHA-256 once one read ended. */
export function hashingReads(file: InputFile): { file: InputFile; sha256: () => string } {
	let digest: string | undefined;
	const open = async (): Promise<FileBody> => {
		const body = await file.open();
		const hash = createHash('sha256');
		if (Buffer.isBuffer(body)) {
			digest = hash.update(body).digest('hex');
			return body;
		}
		digest = undefined;
		let read = 0;
		// Readable's own map: each chunk handed on as the request pulls it, so backpressure holds;
		// done with the last byte (the request may end before it asks the stream for its end).
		return body.map((chunk: Buffer) => {
			hash.update(chunk);
			read += chunk.length;
			if (read === file.size) digest = hash.digest('hex');
			return chunk;
		});
	};
	return {
		file: { ...file, open },
		sha256: () => {
			if (digest === undefined) throw new Error('the file was not read to its end');
			return digest;
		},
	};
}

/**
 * The file, each stream it opens kept: `close` ends every one still open (a probe that stopped
 * early, an upload whose request ended before the stream did) and resolves once each has closed,
 * so a slot for files is free only when its file is no longer read.
 */
export function closingReads(file: InputFile): { file: InputFile; close: () => Promise<void> } {
	const opened: Array<Exclude<FileBody, Buffer>> = [];
	const open = async (): Promise<FileBody> => {
		const body = await file.open();
		if (!Buffer.isBuffer(body)) opened.push(body);
		return body;
	};
	const close = async () => {
		await Promise.all(
			opened.splice(0).map(async (stream) => {
				if (stream.closed) return;
				const closed = new Promise<void>((resolve) => stream.once('close', resolve));
				stream.destroy();
				await closed;
			}),
		);
	};
	return { file: { ...file, open }, close };
}
