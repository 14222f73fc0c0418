import { Cluster, Redis, type RedisOptions } from 'ioredis';

/** A connection to one Redis server or to a Redis Cluster; both speak the same commands here. */
export type RedisConnection = Redis | Cluster;

/** REDIS_URL plus REDIS_CLUSTER: with the flag, the URL names one node (seed) of the cluster. */
export interface RedisTarget {
  url: string;
  cluster: boolean;
}

/**
 * Opens a connection to REDIS_URL. In cluster mode the URL's node is only the seed: the client
 * discovers the other nodes and routes each command (and each script, by its keys' hash slot).
 * Options meant for one connection apply to every node's connection.
 */
export function connectRedis(target: RedisTarget | string, options: RedisOptions = {}): RedisConnection {
  const { url, cluster } = typeof target === 'string' ? { url: target, cluster: false } : target;
  if (!cluster) return new Redis(url, options);
  const seed = new URL(url);
  const { enableOfflineQueue, enableAutoPipelining, lazyConnect, ...perNode } = options;
  return new Cluster([{ host: seed.hostname, port: Number(seed.port || 6379) }], {
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
    ...(enableAutoPipelining === undefined ? {} : { enableAutoPipelining }),
    ...(lazyConnect === undefined ? {} : { lazyConnect }),
    redisOptions: {
      ...perNode,
      ...(seed.username ? { username: decodeURIComponent(seed.username) } : {}),
      ...(seed.password ? { password: decodeURIComponent(seed.password) } : {}),
      ...(seed.protocol === 'rediss:' ? { tls: {} } : {}),
    },
  });
}

/**
 * Resolves true once the connection is ready (at once if it is), false after `ms`: a short wait
 * for a reconnect, never an unbounded queue of calls behind a Redis that is away.
 */
export function redisReady(redis: RedisConnection, ms: number): Promise<boolean> {
  if (redis.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (value: boolean) => {
      clearTimeout(timer);
      redis.off('ready', onReady);
      resolve(value);
    };
    const onReady = () => done(true);
    const timer = setTimeout(() => done(false), ms);
    redis.once('ready', onReady);
  });
}
