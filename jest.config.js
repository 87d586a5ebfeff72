/** Unit, sandbox and in-process n8n tests. The e2e suite against real n8n has its own config. */
module.exports = {
	preset: 'ts-jest',
	testEnvironment: 'node',
	roots: ['<rootDir>/test'],
	testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/e2e/', '<rootDir>/test/ui/'],
	transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
	// Node files are imported as *.node.js: without an extension tsx would find the codex *.node.json.
	moduleNameMapper: { '^(\\.{1,2}/.*\\.node)\\.js$': '$1' },
	testTimeout: 30000,
	// Two test files at once, also on 2 cores: most tests wait on the sandbox's I/O, not the CPU.
	maxWorkers: 2,
};
