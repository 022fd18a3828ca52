import { describe, expect, it } from 'vitest';
import { clientNetwork } from '#lib/auth/rate-limit';

/** The per-IP window's key: an IPv4 address, or an IPv6 address's /64 however it is written. */
describe('clientNetwork', () => {
  it('keeps an IPv4 address; an IPv4-mapped IPv6 address is its IPv4 address', () => {
    expect(clientNetwork('203.0.113.9')).toBe('203.0.113.9');
    expect(clientNetwork('::ffff:203.0.113.9')).toBe('203.0.113.9');
  });

  it('one /64 is one window, whatever the interface id and however compressed', () => {
    const net = '2001:db8:1:2::/64';
    for (const ip of ['2001:db8:1:2::1', '2001:0db8:0001:0002:ffff:ffff:ffff:ffff', '2001:DB8:1:2:0:0:0:0', '2001:db8:1:2:a::b'])
      expect(clientNetwork(ip), ip).toBe(net);
    expect(clientNetwork('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
    expect(clientNetwork('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(clientNetwork('::1')).toBe('0:0:0:0::/64');
    expect(clientNetwork('fe80::1:2:3:4')).toBe('fe80:0:0:0::/64');
  });

  it('leaves what is no address as it is (the pipeline passes "unknown")', () => {
    expect(clientNetwork('unknown')).toBe('unknown');
  });
});
