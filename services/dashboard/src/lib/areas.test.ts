import { describe, expect, it } from 'vitest';
import { refusedArea } from './areas.ts';
import type { Account } from './session.tsx';

const customer: Account = {
  id: '00000000-0000-4000-8000-000000000001',
  email: 'c@example.com',
  displayName: null,
  status: 'active',
  isAdmin: false,
  isReseller: false,
  resellerId: null,
  createdAt: '2026-01-01T00:00:00Z',
  updatedAt: '2026-01-01T00:00:00Z',
};

describe('the role guard', () => {
  it('keeps customers out of the admin and reseller areas, and lets each role into its own', () => {
    expect(refusedArea('/admin', customer)).toBe('admins');
    expect(refusedArea('/admin/accounts/x', customer)).toBe('admins');
    expect(refusedArea('/reseller/keys', customer)).toBe('resellers');
    expect(refusedArea('/keys', customer)).toBeNull();
    expect(refusedArea('/administrator', customer)).toBeNull();
    expect(refusedArea('/admin/orders', { ...customer, isAdmin: true })).toBeNull();
    expect(refusedArea('/reseller', { ...customer, isReseller: true })).toBeNull();
    expect(refusedArea('/reseller', { ...customer, isAdmin: true })).toBe('resellers');
  });
});
