/**
 * The confirmation after an API key is saved (onboarding, Manage Providers): where it went and
 * whether the provider is ready now, read back from provider status rather than assumed.
 * @module
 */
import { toSvcError } from '../../errors';
import type { TuiClient } from './client';

export async function keySavedText(
  client: Pick<TuiClient, 'providerStatus'>,
  provider: string,
): Promise<string> {
  const saved = `API key saved for ${provider} in the credential store`;
  try {
    const row = (await client.providerStatus()).find((r) => r.id === provider);
    if (!row)
      return `${saved}; svc does not know a provider "${provider}" (add [providers.${provider}] to svc.toml)`;
    return row.ready
      ? `${saved}: ${provider} is ready`
      : `${saved}, but ${provider} is not ready yet: ${row.detail || 'see /provider-status'}`;
  } catch (error) {
    return `${saved} (provider status unavailable: ${toSvcError(error).message})`;
  }
}
