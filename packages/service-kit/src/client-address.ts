import { isIPv6 } from 'node:net';

/**
 * The unit a per-address limit counts: an IPv4 address (also when written IPv4-mapped, `::ffff:a.b.c.d`),
 * or the /64 network of an IPv6 address, since one IPv6 client normally holds a whole /64 and could
 * otherwise take a fresh address for every connection.
 */
export function addressGroupOf(address: string | undefined): string {
  if (!address) return 'unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!isIPv6(address)) return address;
  const [head = '', tail] = address.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups =
    tail === undefined
      ? headGroups
      : [...headGroups, ...Array(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups];
  return `${groups
    .slice(0, 4)
    .map((group) => Number.parseInt(group, 16).toString(16))
    .join(':')}::/64`;
}

/**
 * The client's address: behind a trusted proxy, the last `X-Forwarded-For` entry (the one the proxy
 * appended; a client can write any earlier ones itself), else the socket's peer.
 */
export function clientAddressOf(
  forwardedFor: string | null | undefined,
  peer: string | undefined,
  trustProxy: boolean,
): string {
  if (trustProxy && forwardedFor) {
    const last = forwardedFor.split(',').at(-1)?.trim();
    if (last) return last.slice(0, 64);
  }
  return peer ?? 'unknown';
}
