// HEALTHCHECK for the service images: GET the service's liveness endpoint on its own port.
const ports = {
  gateway: process.env.GATEWAY_PORT ?? '8080',
  'control-plane': process.env.CONTROL_PLANE_PORT ?? '8081',
  'mock-upstream': process.env.MOCK_UPSTREAM_PORT ?? '8090',
};
const port = ports[process.env.TOLLGATE_SERVICE] ?? '8080';
const paths = { gateway: '/livez', 'control-plane': '/api/v1/livez', 'mock-upstream': '/health' };
const path = paths[process.env.TOLLGATE_SERVICE] ?? '/livez';
fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(2_500) }).then(
  (response) => process.exit(response.ok ? 0 : 1),
  () => process.exit(1),
);
