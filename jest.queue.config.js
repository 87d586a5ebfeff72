/** The queue-mode suite: n8n 2.41.1 with Postgres, Redis, webhook processes and workers (npm run test:e2e:queue). */
const e2e = require('./jest.e2e.config.js');

module.exports = {
	...e2e,
	testPathIgnorePatterns: ['/node_modules/'],
	testMatch: ['**/queue.test.ts'],
};
