/** The e2e suite: the package in real n8n (installed into a cache folder on first use). */
module.exports = {
	preset: 'ts-jest',
	testEnvironment: 'node',
	roots: ['<rootDir>/test/e2e'],
	// Queue mode has a suite and a command of its own (jest.queue.config.js, npm run test:e2e:queue).
	testPathIgnorePatterns: ['/node_modules/', 'queue\\.test\\.ts$'],
	transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
	moduleNameMapper: { '^(\\.{1,2}/.*\\.node)\\.js$': '$1' },
	maxWorkers: 1,
	testTimeout: 120000,
};
