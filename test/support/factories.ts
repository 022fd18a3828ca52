import { expect } from 'vitest';
import { newMerchant, type useApi } from './api.ts';

/**
 * The records behaviour tests make through the API, one version each (they were copied per file):
 * a customer, a subscription, and a merchant with them. Each checks its 201 (the answer shown when
 * it differs) and returns the created record as the API answers it.
 */
export type Api = ReturnType<typeof useApi>;
type Body = Record<string, unknown>;

let seq = 0;
/** An email no other test uses (process, sequence and a random part). */
export const uniqueEmail = (prefix = 'c') => `${prefix}${process.pid}-${++seq}-${Math.random().toString(36).slice(2, 7)}@example.com`;

/** A valid POST /subscriptions body: Basic, 100.00 a month, for `customerId`; `over` replaces or adds fields. */
export const subscriptionBody = (customerId: number, over: Body = {}): Body => ({
  customer_id: customerId,
  plan_name: 'Basic',
  mrr: '100.00',
  billing_cycle: 'monthly',
  ...over,
});

/** The factories bound to a file's API client (`useApi()`). */
export const factoriesFor = (api: Api) => {
  /** A new customer of the token's merchant (a unique email unless given). */
  const newCustomer = async <T = { id: number; email: string; name: string }>(
    token: string,
    fields: { email?: string; name?: string } = {},
  ): Promise<T> => {
    const r = await api.post('/customers', token, { email: fields.email ?? uniqueEmail(), name: fields.name ?? 'Customer' });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body.data as T;
  };
  /** `newCustomer`'s id alone. */
  const newCustomerId = async (token: string, fields: { email?: string; name?: string } = {}) => (await newCustomer(token, fields)).id;
  /** A new subscription of `customerId` (`subscriptionBody` with `over`). */
  const createSubscription = async <T = any>(token: string, customerId: number, over: Body = {}): Promise<T> => {
    const r = await api.post('/subscriptions', token, subscriptionBody(customerId, over));
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body.data as T;
  };
  /** A fresh merchant (all abilities) and one customer of it. */
  const merchantWithCustomer = async (fields: { email?: string; name?: string } = {}) => {
    const m = await newMerchant();
    return { ...m, customer: await newCustomer(m.token, fields) };
  };
  /** A fresh merchant, one customer and its subscription (`subscriptionBody` with `over`). */
  const merchantWithSubscription = async (over: Body = {}, fields: { email?: string; name?: string } = {}) => {
    const m = await merchantWithCustomer(fields);
    return { ...m, sub: await createSubscription(m.token, m.customer.id, over) };
  };
  return { newCustomer, newCustomerId, createSubscription, merchantWithCustomer, merchantWithSubscription };
};

/** A subscription as GET /subscriptions lists it, without its customer's email and name: the shape GET /subscriptions/{id} answers. */
export const unnamed = <T extends Record<string, unknown>>({ customer_email: _e, customer_name: _n, ...rest }: T) => rest;
