// Large media made on the fly, for tests and the bench: never held in memory whole.
import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';

/**
 * A stream of `size` bytes in 1 MiB chunks of random data, each chunk numbered so no two are
 * alike. `sha256()` gives the hash of what was read, once the stream has ended.
 */
export function generatedMedia(size: number): { stream: Readable; sha256: () => string } {
	const chunk = randomBytes(1024 * 1024);
	const hash = createHash('sha256');
	let made = 0;
	const stream = new Readable({
		read() {
			if (made >= size) {
				this.push(null);
				return;
			}
			const piece = Buffer.from(chunk.subarray(0, Math.min(chunk.length, size - made)));
			piece.writeUInt32LE(made / chunk.length, 0);
			hash.update(piece);
			made += piece.length;
			this.push(piece);
		},
	});
	return { stream, sha256: () => hash.digest('hex') };
}
