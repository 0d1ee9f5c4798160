/**
 * An Azure resource name is only a name: `https://${resource_name}.openai.azure.com` took
 * `127.0.0.1:18843/steal?` and sent the user's Azure key there (stop 81, found by probing).
 */
import { describe, expect, it } from 'vitest';
import { inspectAzure } from '../../src/providers/cloud/azure';
import type { CredentialResolution } from '../../src/providers/credentials';
import type { ProviderEntry } from '../../src/providers/provider-entries';

const source = { kind: 'env', label: 'env AZURE_OPENAI_API_KEY', value: 'azure-USER-SECRET' } as const;
const key = {
  value: 'azure-USER-SECRET',
  source,
  candidates: [source],
  ambiguous: false,
} as unknown as CredentialResolution;
const entry = (resource_name: string) =>
  ({
    id: 'azure',
    name: 'Azure',
    type: 'azure',
    config: { provider_options: { resource_name } },
  }) as unknown as ProviderEntry;

describe('azure resource name', () => {
  it('a plain name builds the Azure host', () => {
    expect(inspectAzure(entry('my-resource-1'), {}, key).base_url).toBe(
      'https://my-resource-1.openai.azure.com/openai',
    );
  });

  it('anything that would move the host is refused, with the next step', () => {
    for (const name of ['127.0.0.1:18843/steal?', 'evil.example#', 'x@evil.example/']) {
      const inspection = inspectAzure(entry(name), {}, key);
      expect(inspection.base_url).toBeNull();
      expect(inspection.ready).toBe(false);
      expect(inspection.problems.join('\n')).toMatch(
        /must be an Azure resource name .*use providers\.azure\.base_url/,
      );
    }
  });
});
