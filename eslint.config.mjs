// n8n's own community-node rules (the ones n8n's verification applies), from @n8n/node-cli.
import { config } from '@n8n/node-cli/eslint';

export default config;
