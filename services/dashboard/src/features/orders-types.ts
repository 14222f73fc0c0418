export interface Money {
  amount: string;
  currency: string;
  exponent: number;
}

export interface Payment {
  provider: 'stripe' | 'manual' | 'development';
  status: 'pending' | 'succeeded' | 'failed' | 'refunded';
  nextStep: 'redirect' | 'verify' | 'wait';
  redirectUrl: string | null;
  instructions: string | null;
  reference: string;
  amount: Money;
  failureReason: string | null;
}

export interface Order {
  id: string;
  status: 'pending' | 'paid' | 'expired' | 'cancelled' | 'failed' | 'refunded';
  /** package: buys packageId; top_up: buys credit (packageId null). */
  kind?: 'package' | 'top_up';
  packageId: string | null;
  provider: 'stripe' | 'manual' | 'development';
  reference: string;
  listPrice: Money;
  discount: Money;
  price: Money;
  grants: { tokens: string; bonusTokens: string; bonusCredits: string; credits?: string };
  /** An automatic top-up, charged to the kept card. */
  automatic?: boolean;
  promotionCode: string | null;
  refunded: { tokens: string; credits: string } | null;
  accountId: string;
  expiresAt: string;
  paidAt: string | null;
  closedAt: string | null;
  createdAt: string;
  payment: Payment | null;
  /** Seller (one entry per line) and tax line of the printed receipt. */
  receipt?: { seller: string[] | null; taxNote: string };
}
