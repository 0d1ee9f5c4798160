import { describe, expect, it } from 'vitest';
import { isLoopbackHostname, isLoopbackUrl } from './loopback';

describe('loopback', () => {
  it('knows loopback names, brackets and IPv4-mapped forms included', () => {
    for (const host of [
      '127.0.0.1',
      '127.1.2.3',
      'localhost',
      'LocalHost',
      'ip6-localhost',
      '::1',
      '[::1]',
      '0:0:0:0:0:0:0:1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
    ]) {
      expect(isLoopbackHostname(host), host).toBe(true);
    }
    for (const host of [
      '0.0.0.0',
      '::',
      '192.168.1.4',
      'example.com',
      '128.0.0.1',
      '::ffff:8.8.8.8',
      'localhost.evil',
    ]) {
      expect(isLoopbackHostname(host), host).toBe(false);
    }
  });

  it('takes *.localhost only when asked (a Host header; a resolver may send it to DNS)', () => {
    expect(isLoopbackHostname('app.localhost')).toBe(false);
    expect(isLoopbackUrl('http://app.localhost:8080/v1')).toBe(false);
    expect(isLoopbackHostname('app.localhost', { subdomains: true })).toBe(true);
    expect(isLoopbackHostname('localhost.evil', { subdomains: true })).toBe(false);
  });

  it('reads the host of a URL, as URL normalizes it', () => {
    expect(isLoopbackUrl('http://[::1]:8080/v1')).toBe(true);
    expect(isLoopbackUrl('http://[::ffff:127.0.0.1]:80/')).toBe(true);
    expect(isLoopbackUrl('http://127.0.0.1.attacker.example/')).toBe(false);
    expect(isLoopbackUrl('http://[::ffff:10.0.0.1]/')).toBe(false);
    expect(isLoopbackUrl('not a url')).toBe(false);
    expect(isLoopbackUrl(undefined)).toBe(false);
  });
});
